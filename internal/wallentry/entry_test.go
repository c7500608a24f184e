package wallentry

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
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/addonwall/addonwall/internal/egress"
	"github.com/addonwall/addonwall/internal/loopserver"
)

// fixedDNS answers one public name with a public address (TEST-NET-free,
// so the policy passes it) and nothing else.
type fixedDNS map[string][]netip.Addr

func (d fixedDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := d[host]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("test resolver: no such host %s", host)
}

// loopDialer stands in for the network past the host (DESIGN §12): the
// relay judges the real resolved address, and this dialer maps that exact
// address to a loopback server, or dials a loopback address as it is. It
// dials nothing else, so test traffic stays on loopback.
type loopDialer map[string]string

func (d loopDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	to, ok := d[addr]
	if !ok {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().IsLoopback() {
			return nil, fmt.Errorf("test dialer: no route to %s", addr)
		}
		to = addr
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, to)
}

// echoServer answers every line with "echo: " and the line.
func echoServer(t testing.TB) string {
	return loopserver.Start(t, func(c net.Conn) {
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			fmt.Fprintf(c, "echo: %s\n", sc.Text())
		}
	})
}

func newRelay(t testing.TB, cfg egress.Config) *egress.Relay {
	t.Helper()
	cfg.SocketDir = filepath.Join(t.TempDir(), "relay")
	if cfg.OwnNetwork == nil {
		cfg.OwnNetwork = func() (egress.OwnNetwork, error) { return egress.OwnNetwork{}, nil }
	}
	r, err := egress.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// ephemeral listens on an ephemeral port wherever the config names a
// fixed one, so tests never collide with a real port on this host; the
// config's port is what each listener stands for.
type ephemeral struct {
	addrs map[string]string // config address → actual address
	fail  map[string]error
}

func (e *ephemeral) listen(network, addr string) (net.Listener, error) {
	if err := e.fail[addr]; err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen(network, net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, err
	}
	if e.addrs == nil {
		e.addrs = map[string]string{}
	}
	e.addrs[addr] = ln.Addr().String()
	return ln, nil
}

func startEntry(t testing.TB, cfg Config, l *ephemeral) *entry {
	t.Helper()
	e, err := start(context.Background(), cfg, l.listen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	return e
}

// connectVia sends a CONNECT through the proxy at addr and returns the
// answer's status line and the connection.
func connectVia(t testing.TB, addr, target string) (string, *bufio.Reader, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	status, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the answer to CONNECT %s: %v", target, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil || line == "\r\n" {
			break
		}
	}
	return strings.TrimSpace(status), br, c
}

// The proxy carries a CONNECT to the relay unread: the relay's refusal
// (403 naming the host) and its tunnel both come back through it.
func TestProxyCarriesToTheRelay(t *testing.T) {
	target := echoServer(t)
	r := newRelay(t, egress.Config{
		Rules:    egress.Rules{Internet: true},
		Resolver: fixedDNS{"example.com": {netip.MustParseAddr("93.184.215.14")}},
		Dialer:   loopDialer{"93.184.215.14:443": target},
	})
	l := &ephemeral{}
	startEntry(t, Config{RelaySocket: r.SocketPath(), ProxyPort: DefaultProxyPort}, l)
	proxy := l.addrs["127.0.0.1:39080"]

	status, _, _ := connectVia(t, proxy, "example.com:22")
	if !strings.HasPrefix(status, "HTTP/1.1 403") {
		t.Fatalf("CONNECT example.com:22 answered %q, want 403", status)
	}
	// Positive control: the same name on 443 is tunnelled.
	status, br, c := connectVia(t, proxy, "example.com:443")
	if status != "HTTP/1.1 200 Connection established" {
		t.Fatalf("CONNECT example.com:443 answered %q", status)
	}
	fmt.Fprintln(c, "hello")
	if line, err := br.ReadString('\n'); err != nil || line != "echo: hello\n" {
		t.Fatalf("through the tunnel: %q %v", line, err)
	}
	st := r.Stats()
	if st.Allowed != 1 || st.Refusals[string(egress.ReasonPortNotAllowed)] != 1 {
		t.Fatalf("relay stats %+v: the relay, not the entry, must have judged both", st)
	}
}

// A listed-port forwarder reaches its one target, whatever its client
// sends (NET-24); a refusal by the relay ends the client's connection.
func TestForwarderReachesItsTargetOnly(t *testing.T) {
	target := echoServer(t)
	ap := netip.MustParseAddrPort(target)
	listed, err := egress.ParseListed(target, true)
	if err != nil {
		t.Fatal(err)
	}
	var refuse atomic.Bool
	r := newRelay(t, egress.Config{
		Rules:  egress.Rules{Listed: []egress.Listed{listed}},
		Dialer: loopDialer{},
		// A stand-in for internal/listener's check: this test owns the
		// listener it allows.
		ListenerCheck: func(_ context.Context, a netip.AddrPort, _ bool) error {
			if a != ap || refuse.Load() {
				return errors.New("not the test's listener")
			}
			return nil
		},
	})
	cfg, _ := ConfigFor(egress.Rules{Listed: []egress.Listed{listed}}, r.SocketPath(), Door{})
	l := &ephemeral{}
	startEntry(t, cfg, l)
	fwd := l.addrs[target]
	if fwd == "" {
		t.Fatalf("no forwarder for %s: %+v", target, cfg)
	}
	c, err := net.Dial("tcp", fwd)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT evil.example:443 HTTP/1.1\r\n")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "echo: CONNECT evil.example:443 HTTP/1.1\n" {
		t.Fatalf("the forwarder did not carry the bytes to its target unchanged: %q %v", line, err)
	}

	// The same forwarder, once the listener check refuses: nothing comes back.
	refuse.Store(true)
	c2, err := net.Dial("tcp", fwd)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_ = c2.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintln(c2, "hello")
	// The entry closes without reading what the client sent, so the end
	// may come as a reset.
	if b, err := io.ReadAll(c2); len(b) != 0 || (err != nil && !errors.Is(err, syscall.ECONNRESET)) {
		t.Fatalf("a refused forward answered %q (%v), want the connection to end", b, err)
	}
	if n := r.Stats().Refusals[string(egress.ReasonListenerRefused)]; n != 1 {
		t.Fatalf("ListenerRefused counted %d times, want 1", n)
	}
}

func TestStartListenFailures(t *testing.T) {
	cfg := Config{RelaySocket: "/run/r/relay.sock", ProxyPort: DefaultProxyPort, Forwards: []Forward{
		{Listen: "127.0.0.1:5432", Target: "localhost:5432"},
		{Listen: "[::1]:5432", Target: "localhost:5432", Optional: true},
	}}
	busy := errors.New("address in use")
	// An optional forward that cannot listen is skipped (positive control)...
	l := &ephemeral{fail: map[string]error{"[::1]:5432": busy}}
	e := startEntry(t, cfg, l)
	if len(e.lns) != 2 {
		t.Fatalf("listeners %d, want the proxy and 127.0.0.1:5432", len(e.lns))
	}
	// ...a required one stops the entry, and the proxy it opened is closed.
	l = &ephemeral{fail: map[string]error{"127.0.0.1:5432": busy}}
	if _, err := start(context.Background(), cfg, l.listen); err == nil || !strings.Contains(err.Error(), "does not start") {
		t.Fatalf("start = %v, want a refusal", err)
	}
	if _, err := net.Dial("tcp", l.addrs["127.0.0.1:39080"]); err == nil {
		t.Fatal("the proxy listener was left open after start failed")
	}
}

// freePort is a loopback port nothing listens on at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// childOf waits for a child of this process running comm.
func childOf(t *testing.T, comm string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ents, _ := os.ReadDir("/proc")
		for _, d := range ents {
			pid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				continue
			}
			s := string(stat)
			open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
			if open < 0 || close < open {
				continue
			}
			f := strings.Fields(s[close+1:])
			if s[open+1:close] == comm && len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no child %q of this process appeared", comm)
	return 0
}

// The add-on gets exactly fds 0, 1 and 2: not a descriptor leaked into the
// entry without O_CLOEXEC, not the entry's listeners. A signal to the
// entry reaches the add-on, and its death by that signal is 128+N.
func TestRunHandsOnlyStdioAndForwardsSignals(t *testing.T) {
	leak, err := unix.Open(os.DevNull, unix.O_RDONLY, 0) // no O_CLOEXEC on purpose
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(leak)
	// Positive control: a plain child of this process inherits it, so the
	// check below can see a leak.
	out, err := exec.Command("/bin/sh", "-c", "test -e /proc/self/fd/"+strconv.Itoa(leak)+" && echo inherited").Output()
	if err != nil || strings.TrimSpace(string(out)) != "inherited" {
		t.Fatalf("control: a plain child did not inherit fd %d (%q, %v); the test cannot see leaks", leak, out, err)
	}

	cfg := Config{RelaySocket: "/run/r/relay.sock", ProxyPort: freePort(t)}
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := Run(context.Background(), cfg, []string{"/usr/bin/sleep", "30"})
		done <- result{code, err}
	}()
	pid := childOf(t, "sleep")
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range fds {
		names = append(names, d.Name())
	}
	if strings.Join(names, " ") != "0 1 2" {
		t.Errorf("the add-on holds descriptors %v, want exactly 0 1 2", names)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.code != 128+int(syscall.SIGTERM) {
			t.Fatalf("Run = %d, %v; want %d after SIGTERM reached the add-on", r.code, r.err, 128+int(syscall.SIGTERM))
		}
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatal("SIGTERM to the entry did not end the add-on")
	}
}

func TestRunExitCodes(t *testing.T) {
	cfg := Config{RelaySocket: "/run/r/relay.sock", ProxyPort: freePort(t)}
	if code, err := Run(context.Background(), cfg, []string{"/bin/sh", "-c", "exit 7"}); err != nil || code != 7 {
		t.Fatalf("Run = %d, %v; want the add-on's 7", code, err)
	}
	if code, err := Run(context.Background(), cfg, []string{"sh", "-c", "exit 0"}); err == nil || code != ExitEntryFailed {
		t.Fatalf("a relative command: Run = %d, %v; want a refusal", code, err)
	}
	// A proxy port that is taken: the add-on never runs.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	marker := filepath.Join(t.TempDir(), "ran")
	busy := Config{RelaySocket: "/run/r/relay.sock", ProxyPort: ln.Addr().(*net.TCPAddr).Port}
	if code, err := Run(context.Background(), busy, []string{"/bin/sh", "-c", "touch " + marker}); err == nil || code != ExitEntryFailed {
		t.Fatalf("Run with the proxy port taken = %d, %v; want a refusal", code, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the add-on ran although the entry could not listen")
	}
}

// TestDoorCarriesBytesUnreadToTheDoorSocket: the door port hands the
// client's bytes, whatever they say, to the door socket and nowhere else;
// the proxy port beside it still goes to the relay.
func TestDoorCarriesBytesUnreadToTheDoorSocket(t *testing.T) {
	dir := t.TempDir()
	relaySock, doorSock := filepath.Join(dir, "relay.sock"), filepath.Join(dir, "door.sock")
	got := map[string]chan string{relaySock: make(chan string, 1), doorSock: make(chan string, 1)}
	for path, ch := range got {
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				line, _ := bufio.NewReader(c).ReadString('\n')
				ch <- line
				fmt.Fprintf(c, "from %s\n", filepath.Base(path))
				c.Close()
			}
		}()
	}
	cfg, _ := ConfigFor(egress.Rules{}, relaySock, Door{Port: 3001, Socket: doorSock})
	l := &ephemeral{}
	startEntry(t, cfg, l)
	ask := func(addr, line string) string {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprint(c, line)
		reply, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			t.Fatalf("no reply through %s: %v", addr, err)
		}
		return reply
	}
	door := l.addrs["127.0.0.1:3001"]
	if door == "" {
		t.Fatalf("no door listener: %+v", l.addrs)
	}
	if r := ask(door, "GET //../admin HTTP/1.1\n"); r != "from door.sock\n" || <-got[doorSock] != "GET //../admin HTTP/1.1\n" {
		t.Fatalf("the door's bytes did not reach the door socket unchanged: %q", r)
	}
	// Control: the proxy port reaches the relay, not the door.
	if r := ask(l.addrs["127.0.0.1:39080"], "CONNECT a:443 HTTP/1.1\n"); r != "from relay.sock\n" || <-got[relaySock] != "CONNECT a:443 HTTP/1.1\n" {
		t.Fatalf("the proxy's bytes did not reach the relay: %q", r)
	}
}
