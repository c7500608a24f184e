// Package bwrap turns a typed plan into bubblewrap's argument list, probes
// whether bubblewrap can hold a wall on this computer, and starts the walled
// (and, separately, the unwalled) child.
//
// bubblewrap's own process lives inside the wall, where the add-on can read
// its argv and environment through /proc. So bwrap is started with a fixed
// two-entry environment, and everything else (the bind list, the child's
// environment) travels NUL-separated through an --args descriptor. bwrap
// 0.8 does not take the command from --args, so its argv is
// "bwrap --args 3 -- COMMAND ARGS...": only the add-on's own argv, which it
// sees as its own cmdline anyway.
//
// Run as root, --unshare-user maps uid 0 inside to real root outside; with
// --cap-drop ALL the child holds no capability, but files owned by root on a
// bound path are still its own by uid. That is why /etc is never bound
// whole and every host path is masked or bound narrowly.
package bwrap

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"

	"github.com/addonwall/addonwall/internal/plan"
)

// FdKind says what one descriptor handed to bubblewrap carries.
type FdKind string

// The descriptor kinds.
const (
	FdArgs    FdKind = "args"
	FdStatus  FdKind = "json-status"
	FdSeccomp FdKind = "seccomp"
	FdMount   FdKind = "mount"
	FdData    FdKind = "data"
)

// FdUse is one descriptor bubblewrap receives; Mount indexes the plan's
// mounts for FdMount and FdData.
type FdUse struct {
	Kind  FdKind
	Mount int
}

// firstFd is the first descriptor number after stdio (os/exec ExtraFiles[0]).
const firstFd = 3

// ArgList is a bubblewrap invocation before any descriptor is opened.
type ArgList struct {
	// Args are the options written NUL-separated to the --args descriptor.
	Args []string
	// Command is the add-on's own argv, after "--" on bwrap's command line.
	Command []string
	// Fds[i] is what descriptor 3+i carries; Fds[0] is always the args fd.
	Fds []FdUse
}

// Argv is bubblewrap's own argv: nothing but the args descriptor and the
// add-on's command.
func (a *ArgList) Argv() []string {
	out := []string{"bwrap", "--args", strconv.Itoa(firstFd), "--"}
	return append(out, a.Command...)
}

// Option adds to a bubblewrap argument list.
type Option func(*builder) error

type builder struct {
	a   ArgList
	env bool
}

func (b *builder) add(args ...string) { b.a.Args = append(b.a.Args, args...) }

func (b *builder) fd(use FdUse) string {
	b.a.Fds = append(b.a.Fds, use)
	return strconv.Itoa(firstFd + len(b.a.Fds) - 1)
}

// Build composes an argument list from options, in order.
func Build(opts ...Option) (*ArgList, error) {
	b := &builder{}
	b.fd(FdUse{Kind: FdArgs})
	for _, o := range opts {
		if err := o(b); err != nil {
			return nil, err
		}
	}
	if len(b.a.Command) == 0 {
		return nil, fmt.Errorf("bubblewrap arguments: no command")
	}
	for _, s := range append(append([]string{}, b.a.Args...), b.a.Command...) {
		if bytes.IndexByte([]byte(s), 0) >= 0 {
			return nil, fmt.Errorf("bubblewrap arguments: %q holds a NUL byte", s)
		}
	}
	return &b.a, nil
}

// WithNamespaces unshares the plan's namespaces. A wall needs all of them.
func WithNamespaces(ns plan.Namespaces) Option {
	return func(b *builder) error {
		for _, x := range []struct {
			on   bool
			flag string
		}{
			{ns.User, "--unshare-user"}, {ns.DisableUserns, "--disable-userns"},
			{ns.PID, "--unshare-pid"}, {ns.IPC, "--unshare-ipc"}, {ns.UTS, "--unshare-uts"},
			{ns.Cgroup, "--unshare-cgroup"}, {ns.Net, "--unshare-net"},
		} {
			if x.on {
				b.add(x.flag)
			}
		}
		return nil
	}
}

// WithHostname sets the wall's host name.
func WithHostname(name string) Option {
	return func(b *builder) error { b.add("--hostname", name); return nil }
}

// WithHardening drops every capability, ties the wall's life to its parent
// and gives the child a new session (no TIOCSTI into the controller's tty).
func WithHardening() Option {
	return func(b *builder) error {
		b.add("--cap-drop", "ALL", "--die-with-parent", "--new-session")
		return nil
	}
}

// WithMounts adds the plan's mounts in order; fd mounts and bind data get a
// descriptor each.
func WithMounts(ms []plan.Mount) Option {
	return func(b *builder) error {
		for i, m := range ms {
			switch m.Kind {
			case plan.RoBind:
				b.add("--ro-bind", m.Source, m.Dest)
			case plan.RoBindFd:
				b.add("--ro-bind-fd", b.fd(FdUse{Kind: FdMount, Mount: i}), m.Dest)
			case plan.Bind:
				b.add("--bind-fd", b.fd(FdUse{Kind: FdMount, Mount: i}), m.Dest)
			case plan.Tmpfs, plan.MaskDir:
				b.add("--tmpfs", m.Dest)
			case plan.Proc:
				b.add("--proc", m.Dest)
			case plan.Dev:
				b.add("--dev", m.Dest)
			case plan.Dir:
				b.add("--dir", m.Dest)
			case plan.Symlink:
				b.add("--symlink", m.Source, m.Dest)
			case plan.MaskFile:
				// The host's /dev/null lands on a nodev mount: opening it
				// fails with EACCES, for reading and for writing.
				b.add("--ro-bind", "/dev/null", m.Dest)
			case plan.RoBindData:
				perms := m.Perms
				if perms == 0 {
					perms = 0o444
				}
				b.add("--perms", fmt.Sprintf("%04o", perms), "--ro-bind-data", b.fd(FdUse{Kind: FdData, Mount: i}), m.Dest)
			case plan.RemountRo:
				b.add("--remount-ro", m.Dest)
			default:
				return fmt.Errorf("bubblewrap arguments: mount %d has unknown kind %q", i+1, m.Kind)
			}
		}
		return nil
	}
}

// WithChdir sets the child's working folder.
func WithChdir(dir string) Option {
	return func(b *builder) error { b.add("--chdir", dir); return nil }
}

// WithEnv clears the environment bubblewrap passes on and sets exactly env,
// in name order. An empty map is an empty environment.
func WithEnv(env map[string]string) Option {
	return func(b *builder) error {
		b.add("--clearenv")
		names := make([]string, 0, len(env))
		for k := range env {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			b.add("--setenv", k, env[k])
		}
		b.env = true
		return nil
	}
}

// WithSeccomp hands bubblewrap a seccomp program through a descriptor.
func WithSeccomp() Option {
	return func(b *builder) error { b.add("--seccomp", b.fd(FdUse{Kind: FdSeccomp})); return nil }
}

// WithJSONStatus asks bubblewrap for its JSON status (the wall's pid 1 and
// namespaces, then the child's exit code) on a descriptor.
func WithJSONStatus() Option {
	return func(b *builder) error { b.add("--json-status-fd", b.fd(FdUse{Kind: FdStatus})); return nil }
}

// WithCommand sets what runs inside.
func WithCommand(command string, args []string) Option {
	return func(b *builder) error {
		b.a.Command = append([]string{command}, args...)
		return nil
	}
}

// WalledArgs is the argument list of one walled spawn of p. It validates the
// plan first.
func WalledArgs(p *plan.Plan) (*ArgList, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("bubblewrap arguments: %w", err)
	}
	opts := []Option{
		WithNamespaces(p.Namespaces),
		WithHostname(p.Hostname),
		WithHardening(),
		WithJSONStatus(),
		WithMounts(p.Mounts),
		WithChdir(p.Chdir),
		WithEnv(p.Env),
	}
	if p.Seccomp {
		opts = append(opts, WithSeccomp())
	}
	// With an entry, the wall runs the entry, which starts the add-on.
	argv := p.Argv()
	opts = append(opts, WithCommand(argv[0], argv[1:]))
	a, err := Build(opts...)
	if err != nil {
		return nil, err
	}
	if n := len(a.Args) + len(a.Argv()); n > MaxArgs {
		return nil, fmt.Errorf("the wall needs %d bubblewrap arguments, over the %d that bubblewrap accepts: "+
			"its %d mounts mask too many files one by one (every .env, and every hard link whose other names are outside the wall)",
			n, MaxArgs, len(p.Mounts))
	}
	return a, nil
}

// MaxArgs is bubblewrap's limit on the arguments it parses, its command line
// and --args together (MAX_ARGS in bubblewrap.c). A plan over it is refused
// here, where it can be named, rather than by bubblewrap at each spawn.
const MaxArgs = 9000

// Encode writes an argument list as bubblewrap's --args reads it: every
// argument followed by a NUL.
func Encode(args []string) ([]byte, error) {
	var buf bytes.Buffer
	for _, a := range args {
		if bytes.IndexByte([]byte(a), 0) >= 0 {
			return nil, fmt.Errorf("argument %q holds a NUL byte", a)
		}
		buf.WriteString(a)
		buf.WriteByte(0)
	}
	return buf.Bytes(), nil
}

// Decode reads an --args payload back into arguments.
func Decode(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	parts := bytes.Split(bytes.TrimSuffix(data, []byte{0}), []byte{0})
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out
}
