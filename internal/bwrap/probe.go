package bwrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	v1alpha1 "github.com/addonwall/addonwall/api/v1alpha1"
)

// Candidates are where bubblewrap is looked for, in order.
var Candidates = []string{"/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"}

// setprivCandidates are where setpriv is looked for.
var setprivCandidates = []string{"/usr/bin/setpriv", "/bin/setpriv"}

// RequiredOptions are the bubblewrap options a wall uses. A bwrap lacking
// any of them is too old: the add-on stays off rather than get a weaker wall
// (no fallback from --bind-fd to a path bind).
var RequiredOptions = []string{
	"--args", "--bind-fd", "--ro-bind-fd", "--disable-userns", "--json-status-fd", "--seccomp",
	"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup", "--unshare-net",
	"--die-with-parent", "--new-session", "--cap-drop", "--clearenv", "--setenv", "--chdir",
	"--hostname", "--perms", "--ro-bind-data", "--remount-ro", "--tmpfs", "--proc", "--dev", "--symlink",
}

// DefaultProbeTimeout bounds each step of the probe.
const DefaultProbeTimeout = 5 * time.Second

// ProbeOptions tune Probe.
type ProbeOptions struct {
	// Path is a bwrap binary to probe instead of the Candidates.
	Path string
	// Timeout bounds each step; zero means DefaultProbeTimeout.
	Timeout time.Duration
	// SetprivPath is a setpriv to look for instead of the usual places; "-"
	// means look nowhere.
	SetprivPath string
}

// Result is what the probe found. It maps onto v1alpha1.BubblewrapStatus.
type Result struct {
	Path      string
	Version   string
	Installed bool
	Usable    bool
	// Reason is one of the v1alpha1 Reason constants.
	Reason  string
	Message string
	// Features are the required options this bwrap has; Missing the ones it
	// lacks.
	Features []string
	Missing  []string
	// Setpriv is setpriv's path, empty when there is none.
	Setpriv string
}

// Status is the result as the WallHost status holds it.
func (r Result) Status() v1alpha1.BubblewrapStatus {
	return v1alpha1.BubblewrapStatus{
		Path: r.Path, Version: r.Version, Installed: r.Installed, Usable: r.Usable,
		Reason: r.Reason, Message: r.Message, Features: append([]string{}, r.Features...),
	}
}

// FindSetpriv returns the path of setpriv, or "" when there is none.
func FindSetpriv() string {
	for _, p := range setprivCandidates {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// Probe finds bubblewrap, reads its version and options, and starts a real
// tiny sandbox with the same namespaces and hardening a wall uses.
func Probe(ctx context.Context, opts ProbeOptions) Result {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	var r Result
	switch opts.SetprivPath {
	case "":
		r.Setpriv = FindSetpriv()
	case "-":
	default:
		if st, err := os.Stat(opts.SetprivPath); err == nil && st.Mode().IsRegular() {
			r.Setpriv = opts.SetprivPath
		}
	}
	paths := Candidates
	if opts.Path != "" {
		paths = []string{opts.Path}
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			r.Path = p
			break
		}
	}
	if r.Path == "" {
		r.Reason = v1alpha1.ReasonBubblewrapMissing
		r.Message = fmt.Sprintf("bubblewrap (bwrap) is not installed: looked in %s", strings.Join(paths, ", "))
		return r
	}
	r.Installed = true

	out, _, err := runProbeStep(ctx, timeout, r.Path, []string{"bwrap", "--version"}, nil)
	if err != nil {
		return r.fail(err, "bwrap --version")
	}
	r.Version = strings.TrimSpace(string(out))

	help, helpErr, err := runProbeStep(ctx, timeout, r.Path, []string{"bwrap", "--help"}, nil)
	if err != nil {
		return r.fail(err, "bwrap --help")
	}
	text := string(help) + string(helpErr)
	for _, opt := range RequiredOptions {
		if hasOption(text, opt) {
			r.Features = append(r.Features, opt)
		} else {
			r.Missing = append(r.Missing, opt)
		}
	}
	if len(r.Missing) > 0 {
		r.Reason = v1alpha1.ReasonBubblewrapTooOld
		r.Message = fmt.Sprintf("%s (%s) lacks %s, which the wall needs; install bubblewrap 0.10 or later (Debian 12: 0.8.0-2+deb12u1 or later)", r.Path, r.Version, strings.Join(r.Missing, ", "))
		return r
	}

	args, err := probeArgs()
	if err != nil {
		r.Reason = v1alpha1.ReasonProbeFailed
		r.Message = err.Error()
		return r
	}
	payload, err := Encode(args)
	if err != nil {
		r.Reason = v1alpha1.ReasonProbeFailed
		r.Message = err.Error()
		return r
	}
	argsFile, err := memfdWith("bwrap-probe-args", payload)
	if err != nil {
		r.Reason = v1alpha1.ReasonProbeFailed
		r.Message = err.Error()
		return r
	}
	defer argsFile.Close()
	_, stderr, err := runProbeStep(ctx, timeout, r.Path, []string{"bwrap", "--args", "3", "--", "/usr/bin/true"}, []*os.File{argsFile})
	if err != nil {
		return r.fail(err, "a test sandbox")
	}
	_ = stderr
	r.Usable = true
	r.Reason = v1alpha1.ReasonBubblewrapUsable
	r.Message = fmt.Sprintf("%s started a test sandbox with every namespace a wall uses", r.Version)
	return r
}

// hasOption reports whether help text lists an option as a whole word.
func hasOption(help, opt string) bool {
	for _, line := range strings.Split(help, "\n") {
		fields := strings.Fields(line)
		if len(fields) > 0 && fields[0] == opt {
			return true
		}
	}
	return false
}

// probeArgs is a wall without mounts of the host beyond the system folders.
func probeArgs() ([]string, error) {
	args := []string{
		"--unshare-user", "--disable-userns", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--unshare-cgroup", "--unshare-net", "--cap-drop", "ALL", "--die-with-parent", "--new-session",
		"--clearenv", "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev", "--chdir", "/",
	}
	for _, p := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		st, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if st.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			if err != nil {
				return nil, fmt.Errorf("read the link %s: %w", p, err)
			}
			args = append(args, "--symlink", target, p)
		} else if st.IsDir() {
			args = append(args, "--ro-bind", p, p)
		}
	}
	return args, nil
}

// probeError is a failed probe step.
type probeError struct {
	timedOut bool
	stderr   string
	err      error
}

func (e *probeError) Error() string { return e.err.Error() }

func runProbeStep(ctx context.Context, timeout time.Duration, path string, argv []string, extra []*os.File) ([]byte, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := &exec.Cmd{
		Path: path, Args: argv, Env: bwrapEnv, Dir: "/",
		Stdout: &stdout, Stderr: &stderr, ExtraFiles: extra,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, &probeError{err: err}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return stdout.Bytes(), stderr.Bytes(), &probeError{stderr: stderr.String(), err: err}
		}
		return stdout.Bytes(), stderr.Bytes(), nil
	case <-ctx.Done():
		// Kill the whole group: a hung script's own children go too.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return nil, nil, &probeError{timedOut: true, err: ctx.Err()}
	}
}

// userNSMarkers are bubblewrap's and the kernel's words for a refused user
// namespace.
var userNSMarkers = []string{
	"No permissions to creating new namespace",
	"Creating new namespace failed",
	"setting up uid map",
	"unprivileged_userns_clone",
	"user namespace",
}

func (r Result) fail(err error, step string) Result {
	var pe *probeError
	if !errors.As(err, &pe) {
		pe = &probeError{err: err}
	}
	if pe.timedOut {
		r.Reason = v1alpha1.ReasonProbeTimedOut
		r.Message = fmt.Sprintf("%s did not answer within the probe's time limit (%s)", step, r.Path)
		return r
	}
	msg := trim(pe.stderr)
	for _, m := range userNSMarkers {
		if strings.Contains(pe.stderr, m) {
			r.Reason = v1alpha1.ReasonUserNamespacesRefused
			r.Message = fmt.Sprintf("bubblewrap cannot create a user namespace here (%s). To fix: sysctl kernel.unprivileged_userns_clone=1 (Debian), a non-zero user.max_user_namespaces, or on Ubuntu 24.04 and later sysctl kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile for bwrap)", msg)
			return r
		}
	}
	r.Reason = v1alpha1.ReasonProbeFailed
	if msg == "" {
		msg = pe.err.Error()
	}
	r.Message = fmt.Sprintf("%s failed: %s", step, msg)
	return r
}

// trim shortens bubblewrap's stderr for a status message.
func trim(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
