package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/addonwall/addonwall/internal/e2eenv"
	"github.com/addonwall/addonwall/internal/egress"
	"github.com/addonwall/addonwall/internal/loopserver"
	"github.com/addonwall/addonwall/internal/runner"
	wallsession "github.com/addonwall/addonwall/internal/session"
)

// The network tests run real walls under the real controller: node
// add-ons that speak to the wall's proxy and to loopback ports, and a
// relay whose resolver and dialer are the test's (DESIGN §12): the policy
// judges the real resolved public address, and the dialer maps it to a
// loopback test server, so no traffic leaves this machine.

// netcheckJS is the add-on: it reads one operation a line on stdin and
// answers each with one JSON line on stdout, until stdin ends.
//
//	connect HOST:PORT   CONNECT through $HTTPS_PROXY; on 200, TLS and GET /
//	direct HOST:PORT    a plain TCP connection: "ping" and the answer line
const netcheckJS = `'use strict';
const net = require('net'), tls = require('tls'), fs = require('fs'), path = require('path'), readline = require('readline');
const proxy = new URL(process.env.HTTPS_PROXY || 'http://127.0.0.1:1');
const ca = fs.readFileSync(path.join(__dirname, 'ca.pem'));
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
function viaProxy(target) {
  const host = target.slice(0, target.lastIndexOf(':'));
  return new Promise((resolve) => {
    let done = false, buf = Buffer.alloc(0);
    const s = net.connect(Number(proxy.port), proxy.hostname);
    const finish = (o) => { if (done) return; done = true; s.destroy(); resolve(Object.assign({op: 'connect', target}, o)); };
    s.setTimeout(15000, () => finish({error: 'timeout'}));
    s.on('error', (e) => finish({error: e.code || String(e)}));
    s.on('connect', () => s.write('CONNECT ' + target + ' HTTP/1.1\r\nHost: ' + target + '\r\n\r\n'));
    const onData = (d) => {
      buf = Buffer.concat([buf, d]);
      const i = buf.indexOf('\r\n\r\n');
      if (i < 0) return;
      const status = buf.slice(0, buf.indexOf('\r\n')).toString();
      if (!status.startsWith('HTTP/1.1 200')) {
        s.once('end', () => finish({status, body: buf.slice(i + 4).toString()}));
        return;
      }
      s.removeListener('data', onData);
      const t = tls.connect({socket: s, servername: host, ca}, () => t.write('GET / HTTP/1.1\r\nHost: ' + host + '\r\nConnection: close\r\n\r\n'));
      let resp = '';
      t.on('data', (d) => { resp += d; });
      t.on('end', () => finish({status, body: resp.slice(resp.indexOf('\r\n\r\n') + 4)}));
      t.on('error', (e) => finish({status, error: e.code || String(e)}));
    };
    s.on('data', onData);
  });
}
function direct(target) {
  const i = target.lastIndexOf(':');
  return new Promise((resolve) => {
    let done = false, got = '';
    const s = net.connect(Number(target.slice(i + 1)), target.slice(0, i));
    const finish = (o) => { if (done) return; done = true; s.destroy(); resolve(Object.assign({op: 'direct', target}, o)); };
    s.setTimeout(15000, () => finish({error: 'timeout'}));
    s.on('error', (e) => finish({error: e.code || String(e)}));
    s.on('connect', () => s.write('ping\n'));
    s.on('data', (d) => { got += d; if (got.includes('\n')) finish({reply: got.trim()}); });
    s.on('end', () => finish({reply: got.trim(), ended: true}));
  });
}
let chain = Promise.resolve();
const rl = readline.createInterface({input: process.stdin});
rl.on('line', (line) => {
  chain = chain.then(async () => {
    const [op, arg] = line.trim().split(/\s+/);
    if (op === 'connect') out(await viaProxy(arg));
    else if (op === 'direct') out(await direct(arg));
    else out({error: 'unknown op ' + op});
  });
});
rl.on('close', () => { chain.then(() => process.exit(0)); });
`

// netAnswer is one line of netcheck's output.
type netAnswer struct {
	Op     string `json:"op"`
	Target string `json:"target"`
	Status string `json:"status"`
	Body   string `json:"body"`
	Reply  string `json:"reply"`
	Error  string `json:"error"`
}

// netLoopDialer dials a checked public address the test routed to a
// loopback server, and a loopback address as it is; nothing else.
type netLoopDialer struct{ routes map[string]string }

func (d netLoopDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	to, ok := d.routes[addr]
	if !ok {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().IsLoopback() {
			return nil, fmt.Errorf("the test dialer dials loopback only, not %s", addr)
		}
		to = addr
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, to)
}

// netResolver answers example.com with a real public address; any other
// name does not resolve.
type netResolver struct{}

func (netResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if host == "example.com" {
		return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// netEcho answers each line with "pong".
func netEcho(t *testing.T) int {
	t.Helper()
	addr := loopserver.Start(t, func(c net.Conn) {
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			fmt.Fprintln(c, "pong")
		}
	})
	return int(netip.MustParseAddrPort(addr).Port())
}

// netSession is one add-on session through the control socket, the way
// `addonwall connect` runs it, with the add-on's stdio as pipes.
type netSession struct {
	t      *testing.T
	in     *os.File
	out    *bufio.Scanner
	stderr *lockedLines
	done   chan error
}

// lockedLines collects the add-on's stderr for failure messages.
type lockedLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLines) add(s string) { l.mu.Lock(); l.b.WriteString(s + "\n"); l.mu.Unlock() }
func (l *lockedLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (h *home) netConnect(id string) *netSession {
	h.t.Helper()
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	s := &netSession{t: h.t, in: inW, out: bufio.NewScanner(outR), stderr: &lockedLines{}, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(errR)
		for sc.Scan() {
			s.stderr.add(sc.Text())
		}
	}()
	go func() {
		code, err := wallsession.Connect(context.Background(), h.paths.ControlSocket(), id, [3]*os.File{inR, outW, errW})
		inR.Close()
		outW.Close()
		errW.Close()
		if err == nil && code != 0 {
			err = fmt.Errorf("the add-on exited with code %d", code)
		}
		s.done <- err
	}()
	h.t.Cleanup(func() { inW.Close(); outR.Close(); errR.Close() })
	return s
}

// ask sends one operation and returns the add-on's answer.
func (s *netSession) ask(line string) netAnswer {
	s.t.Helper()
	if _, err := fmt.Fprintln(s.in, line); err != nil {
		s.t.Fatalf("sending %q: %v; stderr: %s", line, err, s.stderr)
	}
	got := make(chan bool, 1)
	go func() { got <- s.out.Scan() }()
	select {
	case ok := <-got:
		if !ok {
			s.t.Fatalf("%q: the add-on's stdout ended (%v); stderr: %s", line, s.out.Err(), s.stderr)
		}
	case <-time.After(30 * time.Second):
		s.t.Fatalf("%q: no answer in 30 s; stderr: %s", line, s.stderr)
	}
	var a netAnswer
	if err := json.Unmarshal(s.out.Bytes(), &a); err != nil {
		s.t.Fatalf("%q: answer %q: %v", line, s.out.Text(), err)
	}
	return a
}

// end closes the add-on's stdin and waits for its session to end.
func (s *netSession) end() {
	s.t.Helper()
	s.in.Close()
	select {
	case err := <-s.done:
		if err != nil {
			s.t.Fatalf("the session ended with %v; stderr: %s", err, s.stderr)
		}
	case <-time.After(30 * time.Second):
		s.t.Fatalf("the session did not end within 30 s of its stdin closing; stderr: %s", s.stderr)
	}
}

// netHome is a Crow home with four walled node add-ons and a running
// controller whose relays reach only the test's loopback servers.
type netHome struct {
	*home
	echoPort int
	tlsAddr  string
}

func newNetHome(t *testing.T) *netHome {
	e2eenv.Bwrap(t)
	e2eenv.Node(t)
	entryBin := built(t, "addonwall")
	h := &netHome{home: newHome(t), echoPort: netEcho(t)}

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	h.tlsAddr = srv.Listener.Addr().String()
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))

	echo := "127.0.0.1:" + strconv.Itoa(h.echoPort)
	install := func(id string, sandbox map[string]any, extra map[string]any, env map[string]string) map[string]any {
		m := map[string]any{"sandbox": sandbox}
		for k, v := range extra {
			m[k] = v
		}
		h.addon(id, m)
		h.write(filepath.Join("bundles", id, "netcheck.js"), netcheckJS)
		h.write(filepath.Join("bundles", id, "ca.pem"), ca)
		return map[string]any{"command": "node", "args": []string{filepath.Join(h.paths.InstallDir(id), "netcheck.js")}, "env": env}
	}
	// "kept" reaches its echo server only as a manifest default its own
	// compose file publishes on 127.0.0.1; "dropped" names a default it
	// does not publish.
	h.write(filepath.Join("bundles", "kept", "docker-compose.yml"),
		fmt.Sprintf("services:\n  web:\n    image: example/web\n    ports:\n      - \"127.0.0.1:%d:80\"\n", h.echoPort))
	h.write("mcp-addons.json", map[string]any{
		"offline": install("offline", map[string]any{"network": "none"}, nil, nil),
		"online":  install("online", map[string]any{"network": "internet"}, nil, nil),
		"lan": install("lan", map[string]any{"network": map[string]any{"internet": false, "hosts": []string{"ECHO_ADDR"}}},
			nil, map[string]string{"ECHO_ADDR": echo}),
		"kept": install("kept", map[string]any{"network": map[string]any{"hosts": []string{"SVC_URL"}}},
			map[string]any{"env_vars": []any{map[string]any{"name": "SVC_URL", "default": "http://" + echo}}},
			map[string]string{"SVC_URL": "http://" + echo}),
		"dropped": install("dropped", map[string]any{"network": map[string]any{"hosts": []string{"SVC_URL"}}},
			map[string]any{"env_vars": []any{map[string]any{"name": "SVC_URL", "default": "http://127.0.0.1:7"}}},
			map[string]string{"SVC_URL": "http://127.0.0.1:7"}),
	})
	h.run(map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, func(o *runner.Options) {
		o.WallPreparer = func(p *wallsession.WallPreparer) {
			p.EntryBinary = entryBin
			p.TestOnlyEgress = &wallsession.TestOnlyEgress{
				Resolver: netResolver{},
				Dialer:   netLoopDialer{routes: map[string]string{"93.184.215.14:443": h.tlsAddr}},
			}
			// A stand-in for internal/listener's check: the test owns
			// the echo server, and allows that one listener only.
			p.ListenerFor = func(string) egress.ListenerCheck {
				return func(_ context.Context, a netip.AddrPort, _ bool) error {
					if a == netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(h.echoPort)) {
						return nil
					}
					return errors.New("not the test's listener")
				}
			}
		}
	})
	for _, id := range []string{"offline", "online", "lan", "kept", "dropped"} {
		h.waitWord(id, "walled", 20*time.Second)
	}
	return h
}

func TestWalledNetwork(t *testing.T) {
	h := newNetHome(t)
	echo := "127.0.0.1:" + strconv.Itoa(h.echoPort)

	t.Run("network none refuses a CONNECT, naming the host; the internet shape allows it", func(t *testing.T) {
		off := h.netConnect("offline")
		a := off.ask("connect example.com:443")
		if !strings.HasPrefix(a.Status, "HTTP/1.1 403") || !strings.Contains(a.Body, "example.com:443") || !strings.Contains(a.Body, "NetworkNone") {
			t.Errorf("offline CONNECT example.com:443 = %+v, want a 403 naming the host and NetworkNone", a)
		}
		off.end()
		// Positive control: the same request from an add-on with the
		// internet reaches the (loopback) server behind example.com.
		on := h.netConnect("online")
		a = on.ask("connect example.com:443")
		if a.Status != "HTTP/1.1 200 Connection established" || a.Body != "hello from example.com" {
			t.Errorf("online CONNECT example.com:443 = %+v, want the tunnel and the server's answer", a)
		}
		on.end()
	})

	t.Run("a loopback port of the host is out of reach; a listed one is forwarded", func(t *testing.T) {
		off := h.netConnect("offline")
		if a := off.ask("direct " + echo); a.Error != "ECONNREFUSED" || a.Reply != "" {
			t.Errorf("offline direct %s = %+v, want ECONNREFUSED: its namespace has its own loopback", echo, a)
		}
		off.end()
		// Positive control: the same connection from the add-on that
		// lists it goes through its forwarder and the relay.
		lan := h.netConnect("lan")
		if a := lan.ask("direct " + echo); a.Reply != "pong" {
			t.Errorf("lan direct %s = %+v, want pong", echo, a)
		}
		// Listing a host is not the internet.
		if a := lan.ask("connect example.com:443"); !strings.HasPrefix(a.Status, "HTTP/1.1 403") || !strings.Contains(a.Body, "NotListed") {
			t.Errorf("lan CONNECT example.com:443 = %+v, want 403 NotListed", a)
		}
		lan.end()
	})

	t.Run("a manifest default is reached only on a port its own compose publishes", func(t *testing.T) {
		kept := h.netConnect("kept")
		if a := kept.ask("direct " + echo); a.Reply != "pong" {
			t.Errorf("kept direct %s = %+v, want pong", echo, a)
		}
		kept.end()
		dropped := h.netConnect("dropped")
		if a := dropped.ask("direct 127.0.0.1:7"); a.Error != "ECONNREFUSED" {
			t.Errorf("dropped direct 127.0.0.1:7 = %+v, want ECONNREFUSED: no forwarder for a dropped default", a)
		}
		dropped.end()
		w, err := h.wall("dropped")
		if err != nil {
			t.Fatal(err)
		}
		if d := strings.Join(w.Status.Egress.Dropped, "\n"); !strings.Contains(d, "network.hosts SVC_URL") || !strings.Contains(d, "does not publish") {
			t.Errorf("status.egress.dropped of dropped = %q, want the default reported", d)
		}
		if w, err := h.wall("kept"); err != nil || len(w.Status.Egress.Dropped) != 0 {
			t.Errorf("status.egress.dropped of kept = %q (%v), want nothing dropped", w.Status.Egress.Dropped, err)
		}
	})

	t.Run("the internet is port 443 only; status counts the refusals", func(t *testing.T) {
		on := h.netConnect("online")
		for _, target := range []string{"example.com:80", "example.com:22"} {
			if a := on.ask("connect " + target); !strings.HasPrefix(a.Status, "HTTP/1.1 403") || !strings.Contains(a.Body, target) || !strings.Contains(a.Body, "PortNotAllowed") {
				t.Errorf("online CONNECT %s = %+v, want 403 PortNotAllowed naming it", target, a)
			}
		}
		on.end()
		eventually(t, 20*time.Second, "online's status counts its refusals", func() (bool, string) {
			w, err := h.wall("online")
			if err != nil {
				return false, err.Error()
			}
			e := w.Status.Egress
			ok := e.Refusals["PortNotAllowed"] == 2 && len(e.Latest) > 0 && e.Latest[0] == "example.com:22 PortNotAllowed"
			return ok, fmt.Sprintf("%+v", e)
		})
		out, err := h.cli("describe", "addonwall", "online")
		if err != nil || !strings.Contains(out, "PortNotAllowed: 2") {
			t.Errorf("addonwall describe does not show the counts (%v):\n%s", err, out)
		}
		eventually(t, 20*time.Second, "offline's status counts NetworkNone", func() (bool, string) {
			w, err := h.wall("offline")
			if err != nil {
				return false, err.Error()
			}
			return w.Status.Egress.Refusals["NetworkNone"] >= 1, fmt.Sprintf("%+v", w.Status.Egress)
		})
	})

	t.Run("the relay's folder is 0700, this spawn's only, and gone when the spawn ends", func(t *testing.T) {
		relays := filepath.Join(h.paths.StateDir(), "relay")
		on := h.netConnect("online")
		on.ask("connect example.com:22") // the wall is up and its relay answers
		ents, err := os.ReadDir(relays)
		if err != nil || len(ents) != 1 {
			t.Fatalf("relay folders while one session runs: %v %v", ents, err)
		}
		dir := filepath.Join(relays, ents[0].Name())
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("relay folder %s: %v %v, want a 0700 folder", dir, fi, err)
		}
		if st, err := os.Lstat(filepath.Join(dir, "relay.sock")); err != nil || st.Mode()&os.ModeSocket == 0 {
			t.Fatalf("no relay socket in %s: %v", dir, err)
		}
		on.end()
		if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the relay folder %s outlived its spawn: %v", dir, err)
		}
	})

	t.Run("the operator's deny list beats the internet", func(t *testing.T) {
		// Positive control: before the deny list, the tunnel opens.
		on := h.netConnect("online")
		if a := on.ask("connect example.com:443"); a.Status != "HTTP/1.1 200 Connection established" {
			t.Fatalf("online CONNECT example.com:443 = %+v before the deny list", a)
		}
		on.end()
		h.netDeny(t, "93.184.215.14/32")
		eventually(t, 30*time.Second, "a CONNECT to a denied address is refused", func() (bool, string) {
			on := h.netConnect("online")
			a := on.ask("connect example.com:443")
			on.end()
			return strings.HasPrefix(a.Status, "HTTP/1.1 403") && strings.Contains(a.Body, "DenyListed"), fmt.Sprintf("%+v", a)
		})
	})

	t.Run("the add-on holds none of the entry's sockets", func(t *testing.T) {
		lan := h.netConnect("lan")
		lan.ask("direct " + echo) // the add-on has run and is idle
		addon := netProcWith(t, filepath.Join(h.paths.InstallDir("lan"), "netcheck.js"))
		entry := netParentOf(t, addon)
		// Positive control: the entry, its parent, holds its listeners.
		if n := netSocketFds(t, entry); n == 0 {
			t.Fatalf("the entry (pid %d) holds no socket; the check below would see nothing", entry)
		}
		if n := netSocketFds(t, addon); n != 0 {
			t.Errorf("the add-on (pid %d) holds %d sockets; the entry's must not reach it", addon, n)
		}
		lan.end()
	})
}

// netDeny sets this host's WallHost spec.egressDenyList by hand, as an
// operator edits the store's file.
func (h *netHome) netDeny(t *testing.T, cidrs ...string) {
	t.Helper()
	var file string
	_ = filepath.WalkDir(h.paths.Store, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(filepath.Dir(p)) == "wallhosts" && filepath.Base(p) == testNS+".yaml" {
			file = p
		}
		return nil
	})
	if file == "" {
		t.Fatalf("no WallHost file for %s under %s", testNS, h.paths.Store)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	spec["egressDenyList"] = cidrs
	obj["spec"] = spec
	out, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(filepath.Dir(file), ".deny-edit")
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
}

// netProcWith finds the process whose command line holds arg.
func netProcWith(t *testing.T, arg string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && strings.Contains(string(b), "\x00"+arg) {
			return pid
		}
	}
	t.Fatalf("no process runs %s", arg)
	return 0
}

func netParentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		t.Fatal(err)
	}
	return ppid
}

// socketFds counts the sockets among a process's descriptors.
func netSocketFds(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		if err == nil && strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n
}
