package listener

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tinylisten is the test service binary, built once (static) by TestMain
// into a folder every user may run it from.
var tinylisten string

// nobody is the user the tests play the controller's (Crow's) user with,
// so that root can stand for "root" and another uid for another user.
const nobody = 65534

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "lsnrbin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tinylisten = filepath.Join(dir, "tinylisten")
	gobin, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "the go tool is needed to build the test service:", err)
		return 1
	}
	cmd := exec.Command(gobin, "build", "-o", tinylisten, "./testdata/tinylisten")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the test service: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// needRoot skips or fails: these tests start services as other users.
func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("ADDONWALL_E2E") == "required" {
			t.Fatal("ADDONWALL_E2E=required, but the test is not root (it runs services as other users)")
		}
		t.Skip("skipping: starting services as other users needs root (set ADDONWALL_E2E=required to make this a failure)")
	}
}

// openDir makes a folder under /tmp that every user may enter.
func openDir(t testing.TB, prefix string) string {
	t.Helper()
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err = filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// service is one running tinylisten.
type service struct {
	cmd  *exec.Cmd
	Addr netip.AddrPort
}

type svcOpts struct {
	uid   uint32
	dir   string   // working folder
	exe   string   // the binary (default tinylisten)
	arg0  string   // argv[0] (default exe)
	flags []string // tinylisten flags
	extra []string // argv after ADDR
}

// start runs tinylisten on addr and waits until it listens.
func start(t testing.TB, addr string, o svcOpts) *service {
	t.Helper()
	exe := o.exe
	if exe == "" {
		exe = tinylisten
	}
	args := append(append(append([]string{}, o.flags...), addr), o.extra...)
	cmd := exec.Command(exe, args...)
	if o.arg0 != "" {
		cmd.Args[0] = o.arg0
	}
	cmd.Dir = o.dir
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: o.uid, Gid: o.uid},
		Pdeathsig:  syscall.SIGKILL,
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	s := &service{cmd: cmd}
	t.Cleanup(s.stop)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		s.stop()
		t.Fatalf("%s %v did not listen: %v; stderr: %s", exe, args, err, stderr.String())
	}
	a, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTEN ")
	if !ok {
		t.Fatalf("unexpected output %q", line)
	}
	s.Addr = netip.MustParseAddrPort(a)
	go io.Copy(io.Discard, out)
	return s
}

func (s *service) stop() {
	if s.cmd.Process != nil && s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

func (s *service) pid() int { return s.cmd.Process.Pid }

// freePort returns a loopback port nothing listens on (just now).
func freePort(t testing.TB) uint16 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := netip.MustParseAddrPort(l.Addr().String()).Port()
	l.Close()
	return p
}

func uidp(u uint32) *uint32 { return &u }

// crow is a fake Crow: a checkout and a home, each a real folder.
type crow struct{ checkout, home string }

func newCrow(t testing.TB) crow {
	return crow{checkout: openDir(t, "crowco"), home: openDir(t, "crowhome")}
}

func (c crow) checker(t testing.TB, mod func(*Config)) *Checker {
	t.Helper()
	cfg := Config{AddonID: "alpha", Checkout: c.checkout, Home: c.home, UID: uidp(nobody), TTL: -1}
	if mod != nil {
		mod(&cfg)
	}
	ch, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// expect checks one answer: want "" means allowed.
func expect(t testing.TB, ch *Checker, addr netip.AddrPort, ownerTyped bool, want Reason) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := ch.Check(ctx, addr, ownerTyped)
	if got := ReasonOf(err); got != want {
		t.Fatalf("Check(%s, ownerTyped=%v) = %q (%v), want %q", addr, ownerTyped, got, err, want)
	}
	if err != nil {
		var r *Refusal
		if !errors.As(err, &r) || r.Addr != addr {
			t.Fatalf("the refusal %v does not name %s", err, addr)
		}
	}
}
