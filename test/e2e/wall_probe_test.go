package e2e

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/meta"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/e2eenv"
	"github.com/addonwall/addonwall/test/probe/report"
)

const zeroCaps = "0000000000000000"

// The probe program as an add-on, through the real controller and a real
// `addonwall connect`, reports from inside its wall. The same probe,
// unwalled by the owner's choice and reached the same way, is the positive
// control for each refusal: it shows what the wall takes away.
//
// SECURITY-CASES: ENV-01 and PROC-02 (the controller's environment, with a
// canary, reaches neither the add-on nor bwrap's pid 1), PROC-03 (bwrap's
// command line holds only --args), ENV-07 and FS-08 (exactly fds 0-2 in
// every process of the wall, with a descriptor the controller leaked
// without close-on-exec), PROC-17 (no capabilities, NoNewPrivs 1, Seccomp 2),
// PROC-01 and PROC-22 (only the wall's processes, its own host name),
// PROC-08 (nested user namespaces), PROC-04 (ptrace), PROC-11 (io_uring),
// PROC-12 (bpf, keyctl), PROC-13 (AF_VSOCK, AF_NETLINK), and the network
// namespace holding lo alone.
func TestProbeInsideTheWall(t *testing.T) {
	e2eenv.Bwrap(t)
	const (
		controllerSecret = "canary-ctl-secret-0d93be"
		controllerPlain  = "canary-ctl-plain-77a1c4"
		ownSecret        = "canary-own-4f08aa"
	)
	// The controller runs in this process: its environment is ours.
	t.Setenv("ADDONWALL_CANARY_TOKEN", controllerSecret)
	t.Setenv("ADDONWALL_CANARY_PLAIN", controllerPlain)
	h := newHome(t)

	// A descriptor the controller's process holds without close-on-exec,
	// on a folder the wall does not bind: bubblewrap passes unknown
	// descriptors on (SECURITY-CASES L3), so the controller must mark it
	// before it spawns.
	leakDir := filepath.Join(h.root, "leaked")
	if err := os.Mkdir(leakDir, 0o700); err != nil {
		t.Fatal(err)
	}
	leak, err := unix.Open(leakDir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(leak) })
	if flags, err := unix.FcntlInt(uintptr(leak), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC != 0 {
		t.Fatalf("the leaked descriptor must start without close-on-exec (flags %d, %v)", flags, err)
	}

	// The fourth needle is the store's path, which only the controller and
	// the connect process's command line hold: the unwalled control finds
	// it in another process, which shows the search reaches other
	// processes. (The canaries set above are in this process's Go
	// environment, not in its /proc environ, which is fixed at exec.)
	needles := strings.Join([]string{controllerSecret, controllerPlain, ownSecret, h.paths.Store}, ",")
	entry := func(id string) map[string]any {
		e := h.installProbe(id, nil)
		e["env"] = map[string]string{"PROBE_NEEDLES": needles, "OWN_API_TOKEN": ownSecret}
		return e
	}
	h.write("mcp-addons.json", map[string]any{"pw": entry("pw"), "pu": entry("pu")})
	h.write("addon-walls.json", map[string]any{"version": 1, "addons": map[string]any{
		"pu": map[string]any{"choice": "notWalled", "changedAt": "2026-11-01T00:00:00Z"}}})
	h.runWalls(walledEnv(nil), nil)
	h.waitWord("pw", "walled", 15*time.Second)
	h.waitWord("pu", "not walled (your choice)", 15*time.Second)

	in, err := h.probeOnce("pw", "walled", nil, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	out := h.probeControl("pu", "not walled (your choice)", nil)
	for id, r := range map[string]*report.Report{"pw": in, "pu": out} {
		if len(r.Errors) > 0 {
			t.Errorf("%s: the probe could not examine: %v", id, r.Errors)
		}
	}
	if flags, err := unix.FcntlInt(uintptr(leak), unix.F_GETFD, 0); err != nil || flags&unix.FD_CLOEXEC == 0 {
		t.Errorf("the controller did not mark the leaked descriptor close-on-exec before spawning (flags %d, %v)", flags, err)
	}

	t.Run("attested", func(t *testing.T) {
		w, err := h.wall("pw")
		if err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(w.Status.Conditions, wallsv1.WallVerifiedCondition)
		if c == nil || c.Status != "True" || !strings.Contains(c.Message, "Seccomp: 2") || !strings.Contains(c.Message, "NoNewPrivs: 1") {
			t.Errorf("WallVerified after a walled session: %+v", c)
		}
	})

	t.Run("processes", func(t *testing.T) {
		// Positive control: unwalled, the probe sees the host's processes.
		if len(out.Processes) < 5 {
			t.Fatalf("the unwalled probe sees %d processes", len(out.Processes))
		}
		// Walled, it sees bwrap's pid 1, the wall's entry and itself.
		if len(in.Processes) > 4 {
			t.Errorf("the walled probe sees %d processes: %v", len(in.Processes), comms(in.Processes))
		}
		if p1, ok := in.Process(1); !ok || p1.Comm != "bwrap" {
			t.Errorf("pid 1 in the wall is %+v, want bubblewrap", p1)
		}
		if h, _ := os.Hostname(); in.Hostname == h || in.Hostname == "" {
			t.Errorf("the wall shows the host's name %q", in.Hostname)
		}
		if out.Hostname != mustHostname(t) {
			t.Errorf("control: the unwalled probe shows host name %q", out.Hostname)
		}
	})

	t.Run("descriptors", func(t *testing.T) {
		for _, p := range in.Processes {
			if !p.FDs.OK {
				t.Errorf("pid %d (%s): its descriptors could not be listed (%s); the check would be empty", p.PID, p.Comm, p.FDs.Errno)
				continue
			}
			for _, fd := range p.FDs.Open {
				if strings.HasPrefix(fd.Target, leakDir) {
					t.Errorf("pid %d (%s) holds fd %d on the controller's leaked folder %s", p.PID, p.Comm, fd.Num, fd.Target)
				}
				// In every process of the wall, a descriptor that survives
				// exec is 0, 1 or 2: anything else would reach the add-on
				// (bwrap's pid 1 and the entry hold their own descriptors
				// close-on-exec).
				if !fd.FlagsKnown {
					t.Errorf("pid %d (%s) fd %d: flags unknown", p.PID, p.Comm, fd.Num)
				} else if !fd.CloseOnExec && fd.Num > 2 {
					t.Errorf("pid %d (%s) holds fd %d (%s) across exec: only 0, 1 and 2 may", p.PID, p.Comm, fd.Num, fd.Target)
				}
			}
		}
		self, ok := in.Process(in.PID)
		if !ok {
			t.Fatal("the probe is not in its own process list")
		}
		// Positive control of the reading: 0, 1 and 2 are there without
		// close-on-exec, and the Go runtime's own descriptors with it.
		inherited, runtimeOwn := 0, 0
		for _, fd := range self.FDs.Open {
			switch {
			case fd.Num <= 2 && fd.FlagsKnown && !fd.CloseOnExec:
				inherited++
			case fd.CloseOnExec:
				runtimeOwn++
			}
		}
		if inherited != 3 || runtimeOwn == 0 {
			t.Errorf("the add-on's descriptors read %+v: want 0-2 inherited and the runtime's own close-on-exec", self.FDs.Open)
		}
		// Every other process of the wall (bwrap's pid 1, the entry) holds
		// no descriptor that leads out of the wall: no directory or file of
		// the host beyond what the wall binds.
		for _, p := range in.Processes {
			if p.IsSelf {
				continue
			}
			for _, fd := range p.FDs.Open {
				if strings.HasPrefix(fd.Target, h.root) && !strings.HasPrefix(fd.Target, h.paths.InstallDir("pw")) && !strings.HasPrefix(fd.Target, filepath.Join(h.paths.DataDir, "pw")) {
					t.Errorf("pid %d (%s) holds fd %d on %s", p.PID, p.Comm, fd.Num, fd.Target)
				}
			}
		}
		for fd, tty := range in.StdioTTY {
			if tty {
				t.Errorf("fd %d of the add-on is a terminal", fd)
			}
		}
	})

	t.Run("status", func(t *testing.T) {
		for _, p := range in.Processes {
			s := p.Status
			for name, v := range map[string]string{"CapEff": s.CapEff, "CapPrm": s.CapPrm, "CapBnd": s.CapBnd, "CapAmb": s.CapAmb, "CapInh": s.CapInh} {
				if v != zeroCaps {
					t.Errorf("pid %d (%s): %s = %q in the wall", p.PID, p.Comm, name, v)
				}
			}
			if s.NoNewPrivs != "1" || s.Seccomp != "2" {
				t.Errorf("pid %d (%s): NoNewPrivs %q Seccomp %q, want 1 and 2", p.PID, p.Comm, s.NoNewPrivs, s.Seccomp)
			}
		}
		// Positive control: the same fields read otherwise outside (this
		// runs as root; a plain spawn has neither flag).
		if out.Self.CapEff == zeroCaps || out.Self.NoNewPrivs != "0" || out.Self.Seccomp != "0" {
			t.Errorf("control: the unwalled probe reads CapEff %q NoNewPrivs %q Seccomp %q", out.Self.CapEff, out.Self.NoNewPrivs, out.Self.Seccomp)
		}
	})

	t.Run("network", func(t *testing.T) {
		if !slices.Equal(in.Interfaces.Proc, []string{"lo"}) {
			t.Errorf("interfaces in the wall: %v (%s), want lo alone", in.Interfaces.Proc, in.Interfaces.ProcErr)
		}
		if in.Interfaces.NetlinkErr == "" {
			t.Errorf("AF_NETLINK was open in the wall: %v", in.Interfaces.Netlink)
		}
		if len(out.Interfaces.Proc) < 2 || out.Interfaces.NetlinkErr != "" {
			t.Errorf("control: the unwalled probe sees interfaces %v (netlink: %v %s)", out.Interfaces.Proc, out.Interfaces.Netlink, out.Interfaces.NetlinkErr)
		}
	})

	t.Run("environment", func(t *testing.T) {
		// Positive control of the search: the probe finds each needle in
		// its own environment (PROBE_NEEDLES holds them all), and unwalled
		// it finds the store's path in the connect process's command line.
		selfHits := map[int]bool{}
		for _, n := range in.Needles {
			if n.Self {
				selfHits[n.Index] = true
				continue
			}
			p, _ := in.Process(n.PID)
			switch {
			case n.Where != "environ" || n.PID == 1:
				t.Errorf("needle %d found in pid %d's (%s) %s inside the wall", n.Index, n.PID, p.Comm, n.Where)
			case !subset(p.Environ.Names, in.EnvNames):
				// The wall's entry starts the add-on and holds the add-on's
				// own environment, needles included; anything more would be
				// someone else's.
				t.Errorf("needle %d found in pid %d's (%s) environment, which holds %v beyond the add-on's own %v", n.Index, n.PID, p.Comm, p.Environ.Names, in.EnvNames)
			}
		}
		if len(selfHits) != 4 {
			t.Errorf("the probe found its own needles %v, want all 4: the search is blind", selfHits)
		}
		foundOutside := false
		for _, n := range out.Needles {
			if !n.Self && n.Index == 3 && n.Where == "cmdline" {
				foundOutside = true
			}
		}
		if !foundOutside {
			t.Errorf("control: the unwalled probe did not find the store's path in another process's command line: %+v", out.Needles)
		}
		for _, p := range in.Processes {
			for _, name := range []string{"ADDONWALL_CANARY_TOKEN", "ADDONWALL_CANARY_PLAIN"} {
				if slices.Contains(p.Environ.Names, name) {
					t.Errorf("the controller's %s is in pid %d's (%s) environment in the wall", name, p.PID, p.Comm)
				}
			}
		}
		for _, name := range []string{"ADDONWALL_CANARY_TOKEN", "ADDONWALL_CANARY_PLAIN"} {
			if slices.Contains(in.EnvNames, name) {
				t.Errorf("the controller's %s reached the walled add-on", name)
			}
		}
		if !slices.Contains(in.EnvNames, "OWN_API_TOKEN") {
			t.Errorf("the add-on's own value did not arrive: %v", in.EnvNames)
		}
		if !slices.Contains(out.EnvNames, "ADDONWALL_CANARY_PLAIN") {
			t.Errorf("control: the unwalled probe does not see ADDONWALL_CANARY_PLAIN: %v", out.EnvNames)
		}
		// bwrap's own environment and command line: readable, and empty of
		// everything the wall carries (it all went through --args).
		p1, _ := in.Process(1)
		if !p1.Environ.OK || !p1.Cmdline.OK {
			t.Fatalf("pid 1's environ/cmdline unreadable (%s, %s): the needle check saw nothing", p1.Environ.Errno, p1.Cmdline.Errno)
		}
		if !slices.Equal(p1.Environ.Names, []string{"PATH"}) {
			t.Errorf("bwrap's environment holds %v, want PATH alone", p1.Environ.Names)
		}
		// Its command line is `bwrap --args N -- <entry> ...`: none of the
		// options that carry the wall's binds, variables or filter.
		if !slices.Contains(p1.Cmdline.Options, "--args") {
			t.Errorf("bwrap's command line shows options %v, without --args", p1.Cmdline.Options)
		}
		for _, o := range []string{"--setenv", "--bind", "--ro-bind", "--bind-fd", "--ro-bind-fd", "--seccomp", "--chdir", "--unshare-user"} {
			if slices.Contains(p1.Cmdline.Options, o) {
				t.Errorf("bwrap's command line shows %s: the wall's arguments must travel through --args", o)
			}
		}
	})

	t.Run("syscalls", func(t *testing.T) {
		// Each refusal beside the unwalled outcome of the same call: the
		// arguments make the call fail harmlessly, or succeed, once past
		// the filter, so a differing control shows the refusal is the
		// wall's.
		refused := map[string][]string{
			"unshare_newuser":   {"EPERM", "ENOSPC"},
			"spawn_newuser":     {"EPERM", "ENOSPC"},
			"ptrace_traceme":    {"EPERM"},
			"ptrace_seize_pid1": {"EPERM"},
			"keyctl_badop":      {"EPERM"},
			"add_key":           {"EPERM"},
			"io_uring_setup":    {"EPERM"},
			"io_uring_enter":    {"EPERM"},
			"bpf":               {"EPERM"},
			"socket_vsock":      {"EAFNOSUPPORT"},
			"socket_netlink":    {"EAFNOSUPPORT"},
			"clone3":            {"ENOSYS"},
		}
		if runtime.GOARCH == "amd64" {
			refused["x32_getpid"] = []string{"signal:SIGSYS"}
		}
		for name, want := range refused {
			s, ok := in.Syscall(name)
			if !ok {
				t.Errorf("%s: not attempted in the wall", name)
				continue
			}
			if got := s.Outcome(); !slices.Contains(want, got) {
				t.Errorf("%s (%s): %s in the wall, want %v", name, s.Call, got, want)
			}
			c, ok := out.Syscall(name)
			if !ok || c.Skipped != "" {
				continue // pid 1 outside a wall is the host's init: not tried
			}
			if got := c.Outcome(); slices.Contains(want, got) || got == "failed" {
				t.Errorf("control: %s (%s) unwalled gives %s too; the refusal above is not shown to be the wall's", name, c.Call, got)
			}
		}
		// The controls on the same paths get through inside the wall.
		n := 0
		for _, s := range in.Syscalls {
			if !s.Control {
				continue
			}
			n++
			if got := s.Outcome(); got != "ok" && !(s.Name == "ioctl_tcgets" && got == "EBADF") {
				t.Errorf("control %s (%s) in the wall: %s", s.Name, s.Call, got)
			}
		}
		if n < 5 {
			t.Errorf("only %d positive controls ran in the wall", n)
		}
	})
}

// subset reports whether every name in a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

func comms(ps []report.Process) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Comm)
	}
	return out
}

func mustHostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}
