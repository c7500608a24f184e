package bwrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/go-logr/logr"

	"github.com/addonwall/addonwall/internal/cloexec"
	"github.com/addonwall/addonwall/internal/plan"
)

// bwrapEnv is bubblewrap's whole environment. Nothing from a manifest, an
// entry or the controller reaches it (an LD_PRELOAD there would run on the
// host side, before any namespace exists).
var bwrapEnv = []string{"PATH=/usr/bin:/bin"}

// Stdio is the child's standard streams. A nil reader or writer is
// /dev/null.
type Stdio struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

type startConfig struct {
	bwrap   string
	setpriv *string
	data    map[string][]byte
	log     logr.Logger
}

// StartOption tunes Start and StartUnwalled.
type StartOption func(*startConfig)

// WithBwrapPath names the bubblewrap binary (normally the probe's Path).
func WithBwrapPath(path string) StartOption { return func(c *startConfig) { c.bwrap = path } }

// WithSetprivPath names setpriv for StartUnwalled; an empty path means run
// without it.
func WithSetprivPath(path string) StartOption { return func(c *startConfig) { c.setpriv = &path } }

// WithData supplies the content of a plan's RoBindData slot (the door
// token). The bytes travel through a sealed memfd, never a file on disk.
func WithData(slot string, data []byte) StartOption {
	return func(c *startConfig) {
		if c.data == nil {
			c.data = map[string][]byte{}
		}
		c.data[slot] = data
	}
}

// WithLogger sets the logger. Values are never logged.
func WithLogger(l logr.Logger) StartOption { return func(c *startConfig) { c.log = l } }

// Exit is how a child ended.
type Exit struct {
	// Code is the command's exit code; when the wall never ran the command it
	// is bubblewrap's own.
	Code int
	// SetupFailed is true when bubblewrap exited before it ran the command.
	SetupFailed bool
	// Signal names the signal that ended the process, if one did.
	Signal string
	// Message is the tail of bubblewrap's stderr when setup failed.
	Message string
}

// Child is a started wall (or unwalled child).
type Child struct {
	cmd    *exec.Cmd
	walled bool
	tail   *tailBuffer

	pidReady chan struct{}
	procDone chan struct{} // the process was waited for
	done     chan struct{} // the exit is settled

	mu       sync.Mutex
	pid      int
	ns       map[string]uint64
	exitCode *int
	exit     Exit
	waitErr  error
}

// Pid is the host pid of the wall's pid 1 (bubblewrap's init, the add-on's
// parent) for a walled child, or of the process itself for an unwalled one.
func (c *Child) Pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid
}

// Namespaces are the namespace inodes bubblewrap reported (mnt, net, pid...).
func (c *Child) Namespaces() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]uint64, len(c.ns))
	for k, v := range c.ns {
		out[k] = v
	}
	return out
}

// CommandPid is the host pid of the add-on's own process: the child of the
// wall's pid 1. It is 0 while bubblewrap is still setting the wall up.
func (c *Child) CommandPid() (int, error) {
	pid := c.Pid()
	if !c.walled {
		return pid, nil
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0, fmt.Errorf("read the children of the wall's pid 1 (%d): %w", pid, err)
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0, nil
	}
	var child int
	if _, err := fmt.Sscanf(fields[0], "%d", &child); err != nil {
		return 0, fmt.Errorf("parse the children of %d: %w", pid, err)
	}
	return child, nil
}

// Wait waits for the child to end and reports how. An error means the
// process could not be waited for; a failed wall is an Exit with
// SetupFailed.
func (c *Child) Wait() (Exit, error) {
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exit, c.waitErr
}

// Done is closed when the child has ended.
func (c *Child) Done() <-chan struct{} { return c.done }

// Kill ends the child: for a wall, bubblewrap itself, whose death takes the
// whole pid namespace with it (--die-with-parent).
func (c *Child) Kill() error {
	select {
	case <-c.procDone:
		return nil
	default:
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill pid %d: %w", c.cmd.Process.Pid, err)
	}
	return nil
}

// lenientWriter passes writes on and drops its destination's errors. A wall's
// stderr is copied through the controller (so bubblewrap's own words reach a
// card); a client that stopped reading its stderr must neither stop the copy
// (the add-on would then get EPIPE on its next write) nor make the wall's
// end look like a failure (os/exec reports a copy error from Wait).
type lenientWriter struct{ w io.Writer }

func (l lenientWriter) Write(p []byte) (int, error) {
	_, _ = l.w.Write(p)
	return len(p), nil
}

// tailBuffer keeps the last bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 4096

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailSize {
		t.buf = append([]byte{}, t.buf[len(t.buf)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

func defaultBwrap() string {
	for _, p := range Candidates {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return Candidates[0]
}

// Start starts one walled spawn of p: it validates the plan, checks the
// seccomp program, opens every fd bind without following symlinks, writes
// the arguments to a sealed memfd and starts bubblewrap with a fixed
// environment. It returns once bubblewrap reports the wall's pid 1. Start
// never falls back to anything weaker: every error means nothing ran, or
// what ran has been killed. Ending ctx ends the wall.
func Start(ctx context.Context, p *plan.Plan, seccompProgram []byte, stdio Stdio, opts ...StartOption) (*Child, error) {
	cfg := startConfig{log: logr.Discard()}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.bwrap == "" {
		cfg.bwrap = defaultBwrap()
	}
	if p == nil {
		return nil, fmt.Errorf("start a wall: no plan")
	}
	if p.Seccomp {
		if err := CheckSeccompProgram(seccompProgram); err != nil {
			return nil, fmt.Errorf("start the wall of %s: %w; the add-on stays off", p.AddonID, err)
		}
	} else if len(seccompProgram) != 0 {
		return nil, fmt.Errorf("start the wall of %s: the plan's tier has no seccomp filter but a program was given", p.AddonID)
	}
	args, err := WalledArgs(p)
	if err != nil {
		return nil, fmt.Errorf("start the wall of %s: %w", p.AddonID, err)
	}
	files, statusRead, err := openFds(p, args, seccompProgram, cfg.data)
	if err != nil {
		return nil, fmt.Errorf("start the wall of %s: %w; the add-on stays off", p.AddonID, err)
	}
	c := newChild(true)
	cmd := &exec.Cmd{
		Path:       cfg.bwrap,
		Args:       args.Argv(),
		Env:        bwrapEnv,
		Dir:        "/",
		ExtraFiles: files,
		Stdin:      stdio.Stdin,
		Stdout:     stdio.Stdout,
		Stderr:     c.tail,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	if stdio.Stderr != nil {
		cmd.Stderr = io.MultiWriter(lenientWriter{stdio.Stderr}, c.tail)
	}
	c.cmd = cmd
	statusDone := make(chan struct{})
	go c.readStatus(statusRead, statusDone)
	go c.settle(statusDone)
	if err := c.run(files); err != nil {
		statusRead.Close()
		return nil, fmt.Errorf("start bubblewrap (%s) for %s: %w; the add-on stays off", cfg.bwrap, p.AddonID, err)
	}
	go c.killOn(ctx)
	select {
	case <-c.pidReady:
		cfg.log.V(1).Info("wall started", "addon", p.AddonID, "pid", c.Pid(), "planHash", p.Hash())
		return c, nil
	case <-c.done:
		exit, _ := c.Wait()
		return nil, fmt.Errorf("bubblewrap exited before it set up the wall of %s (code %d): %s; the add-on stays off", p.AddonID, exit.Code, c.tail.String())
	case <-ctx.Done():
		_ = c.Kill()
		<-c.done
		return nil, fmt.Errorf("start the wall of %s: %w", p.AddonID, ctx.Err())
	}
}

// openFds opens every descriptor the argument list names, in order. On an
// error everything opened so far is closed.
func openFds(p *plan.Plan, args *ArgList, seccompProgram []byte, data map[string][]byte) (files []*os.File, statusRead *os.File, err error) {
	defer func() {
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			if statusRead != nil {
				statusRead.Close()
			}
		}
	}()
	for _, use := range args.Fds {
		var f *os.File
		switch use.Kind {
		case FdArgs:
			payload, err := Encode(args.Args)
			if err != nil {
				return files, statusRead, err
			}
			f, err = memfdWith("bwrap-args", payload)
			if err != nil {
				return files, statusRead, err
			}
		case FdStatus:
			r, w, err := os.Pipe()
			if err != nil {
				return files, statusRead, fmt.Errorf("status pipe: %w", err)
			}
			statusRead, f = r, w
		case FdSeccomp:
			f, err = memfdWith("bwrap-seccomp", seccompProgram)
			if err != nil {
				return files, statusRead, err
			}
		case FdMount:
			f, err = OpenBind(p.Mounts[use.Mount])
			if err != nil {
				return files, statusRead, err
			}
		case FdData:
			m := p.Mounts[use.Mount]
			content := m.Data
			if m.Slot != "" {
				var ok bool
				if content, ok = data[m.Slot]; !ok {
					return files, statusRead, fmt.Errorf("the plan needs data for slot %q (%s) and none was given", m.Slot, m.Dest)
				}
			}
			f, err = memfdWith("bwrap-data", content)
			if err != nil {
				return files, statusRead, err
			}
		default:
			return files, statusRead, fmt.Errorf("unknown descriptor kind %q", use.Kind)
		}
		files = append(files, f)
	}
	if statusRead == nil {
		return files, statusRead, fmt.Errorf("the argument list has no status descriptor")
	}
	return files, statusRead, nil
}

// run starts the process from a goroutine locked to its OS thread, which
// stays alive until the process ends: bubblewrap's --die-with-parent (and
// Pdeathsig) fire when the thread that forked it exits, not the process.
func (c *Child) run(files []*os.File) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cloexec.AboveStdio(); err != nil {
			started <- err
			close(c.procDone)
			return
		}
		if err := c.cmd.Start(); err != nil {
			started <- err
			close(c.procDone)
			return
		}
		started <- nil
		err := c.cmd.Wait()
		c.finish(err)
	}()
	err := <-started
	for _, f := range files {
		f.Close() // bubblewrap holds its own copies now
	}
	return err
}

func (c *Child) finish(waitErr error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	state := c.cmd.ProcessState
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		c.waitErr = waitErr
	}
	if state != nil {
		c.exit.Code = state.ExitCode()
		if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			c.exit.Signal = ws.Signal().String()
		}
	}
	close(c.procDone)
}

func newChild(walled bool) *Child {
	c := &Child{walled: walled, pidReady: make(chan struct{}), procDone: make(chan struct{}), done: make(chan struct{}), tail: &tailBuffer{}}
	if !walled {
		go func() { <-c.procDone; close(c.done) }()
	}
	return c
}

// settle decides a wall's exit once both the process and its status stream
// have ended: no exit code in the status means the command never ran.
func (c *Child) settle(statusDone chan struct{}) {
	<-c.procDone
	<-statusDone
	c.mu.Lock()
	if c.exitCode != nil {
		c.exit.Code = *c.exitCode
	} else if c.exit.Signal == "" {
		c.exit.SetupFailed = true
		c.exit.Message = c.tail.String()
	}
	c.mu.Unlock()
	close(c.done)
}

// readStatus reads bubblewrap's JSON status: first the wall's pid 1 and its
// namespaces, at the end the command's exit code. No exit code means the
// command never ran.
func (c *Child) readStatus(r *os.File, done chan struct{}) {
	defer close(done)
	defer r.Close()
	dec := json.NewDecoder(io.LimitReader(r, 64<<10))
	dec.UseNumber()
	readyOnce := sync.Once{}
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			return
		}
		c.mu.Lock()
		if pid, ok := number(doc["child-pid"]); ok && pid > 0 {
			c.pid = int(pid)
			c.ns = map[string]uint64{}
			for k, v := range doc {
				if n, ok := number(v); ok && strings.HasSuffix(k, "-namespace") {
					c.ns[strings.TrimSuffix(k, "-namespace")] = uint64(n)
				}
			}
			readyOnce.Do(func() { close(c.pidReady) })
		}
		if code, ok := number(doc["exit-code"]); ok {
			n := int(code)
			c.exitCode = &n
		}
		c.mu.Unlock()
	}
}

func number(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

func (c *Child) killOn(ctx context.Context) {
	select {
	case <-ctx.Done():
		_ = c.Kill()
	case <-c.procDone:
	}
}

// Invocation is an unwalled command line.
type Invocation struct {
	Path string
	Argv []string
	Env  []string
	Dir  string
}

// UnwalledOption adds to an unwalled invocation.
type UnwalledOption func(*Invocation) error

// WithNoNewPrivs runs the command under setpriv --no-new-privs.
func WithNoNewPrivs(setpriv string) UnwalledOption {
	return func(inv *Invocation) error {
		if setpriv == "" {
			return nil
		}
		inv.Argv = append([]string{setpriv, "--no-new-privs", "--"}, inv.Argv...)
		inv.Path = setpriv
		return nil
	}
}

// WithEnvMap sets exactly env (never the controller's environment).
func WithEnvMap(env map[string]string) UnwalledOption {
	return func(inv *Invocation) error {
		names := make([]string, 0, len(env))
		for k := range env {
			names = append(names, k)
		}
		sort.Strings(names)
		inv.Env = make([]string, 0, len(names))
		for _, k := range names {
			if k == "" || strings.ContainsAny(k, "=\x00") || strings.IndexByte(env[k], 0) >= 0 {
				return fmt.Errorf("variable %q cannot be passed", k)
			}
			inv.Env = append(inv.Env, k+"="+env[k])
		}
		return nil
	}
}

// WithDir sets the working folder.
func WithDir(dir string) UnwalledOption {
	return func(inv *Invocation) error { inv.Dir = dir; return nil }
}

// Unwalled builds an unwalled invocation. Its environment is empty unless
// WithEnvMap sets one: never nil, so never the controller's.
func Unwalled(command string, args []string, opts ...UnwalledOption) (*Invocation, error) {
	if !strings.HasPrefix(command, "/") {
		return nil, fmt.Errorf("command %q is not an absolute path", command)
	}
	inv := &Invocation{Path: command, Argv: append([]string{command}, args...), Env: []string{}, Dir: "/"}
	for _, a := range inv.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, fmt.Errorf("argument %q holds a NUL byte", a)
		}
	}
	for _, o := range opts {
		if err := o(inv); err != nil {
			return nil, err
		}
	}
	return inv, nil
}

// StartUnwalled starts a child that is not walled: only for a "not walled"
// decision, never after a walled attempt (Start has no path here). It runs
// under setpriv --no-new-privs when setpriv exists, with exactly env, in a
// new session, and dies with the controller.
func StartUnwalled(ctx context.Context, command string, args []string, env map[string]string, dir string, stdio Stdio, opts ...StartOption) (*Child, error) {
	cfg := startConfig{log: logr.Discard()}
	for _, o := range opts {
		o(&cfg)
	}
	setpriv := ""
	if cfg.setpriv != nil {
		setpriv = *cfg.setpriv
	} else {
		setpriv = FindSetpriv()
	}
	inv, err := Unwalled(command, args, WithNoNewPrivs(setpriv), WithEnvMap(env), WithDir(dir))
	if err != nil {
		return nil, fmt.Errorf("start %s unwalled: %w", command, err)
	}
	c := newChild(false)
	cmd := &exec.Cmd{
		Path:        inv.Path,
		Args:        inv.Argv,
		Env:         inv.Env,
		Dir:         inv.Dir,
		Stdin:       stdio.Stdin,
		Stdout:      stdio.Stdout,
		Stderr:      stdio.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	}
	c.cmd = cmd
	if err := c.run(nil); err != nil {
		return nil, fmt.Errorf("start %s unwalled: %w", command, err)
	}
	c.mu.Lock()
	c.pid = cmd.Process.Pid
	c.mu.Unlock()
	close(c.pidReady)
	go c.killOn(ctx)
	cfg.log.V(1).Info("unwalled child started", "command", command, "pid", c.pid, "setpriv", setpriv != "")
	return c, nil
}
