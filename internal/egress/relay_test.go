package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/addonwall/addonwall/internal/loopserver"
)

// mapDialer stands in for the network past the host: the policy judges the
// real resolved address, and this dialer maps that exact address to a
// loopback test server (DESIGN §12). An address it has no mapping for is
// an error, so a dial the policy should never have allowed fails loudly.
type mapDialer struct {
	mu     sync.Mutex
	routes map[string]string // checked "addr:port" → loopback "addr:port"
	dialed []string
}

func (d *mapDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, addr)
	to, ok := d.routes[addr]
	d.mu.Unlock()
	if network != "tcp" {
		return nil, fmt.Errorf("test dialer: network %q", network)
	}
	if !ok {
		return nil, fmt.Errorf("test dialer: no route to %s", addr)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", to)
}

func (d *mapDialer) route(checked, to string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.routes == nil {
		d.routes = map[string]string{}
	}
	d.routes[checked] = to
}

func (d *mapDialer) dials() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dialed...)
}

type relayFixture struct {
	relay  *Relay
	dns    *fakeDNS
	dialer *mapDialer
}

func startRelay(t testing.TB, cfg Config) *relayFixture {
	t.Helper()
	f := &relayFixture{dns: testDNS(), dialer: &mapDialer{}}
	if cfg.SocketDir == "" {
		cfg.SocketDir = filepath.Join(t.TempDir(), "relay")
	}
	if cfg.Resolver == nil {
		cfg.Resolver = f.dns
	}
	if cfg.Dialer == nil {
		cfg.Dialer = f.dialer
	}
	if cfg.OwnNetwork == nil {
		cfg.OwnNetwork = func() (OwnNetwork, error) { return testOwn(), nil }
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	f.relay = r
	return f
}

// answer is the relay's reply to one request.
type answer struct {
	status int
	reason string
	body   string
	conn   net.Conn
	br     *bufio.Reader
}

// ask sends raw bytes to the relay and reads its answer's head (and, for
// a refusal, its body).
func ask(t testing.TB, socket, raw string) answer {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// A relay that refuses before reading (too many connections) may close
	// first: its answer is still there to read.
	if _, err := io.WriteString(c, raw); err != nil && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "CONNECT"})
	if err != nil {
		t.Fatalf("reading the relay's answer to %q: %v", raw, err)
	}
	a := answer{status: resp.StatusCode, reason: resp.Header.Get("X-Addonwall-Reason"), conn: c, br: br}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		a.body = string(b)
		if !resp.Close { // net/http moves "Connection: close" here
			t.Errorf("a refusal without Connection: close: %v", resp.Header)
		}
	}
	_ = c.SetDeadline(time.Time{})
	return a
}

func randomBytes(t testing.TB, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// A name that resolves to a public address is spliced byte for byte in
// both directions, including bytes sent in the same write as the CONNECT
// head (NET-15); each direction's end is passed on as a half-close.
func TestRelaySplicesByteForByte(t *testing.T) {
	up := randomBytes(t, 1<<20+17)
	down := randomBytes(t, 3<<19+5)
	got := make(chan []byte, 1)
	server := loopserver.Start(t, func(c net.Conn) {
		go func() {
			_, _ = c.Write(down)
			_ = c.(*net.TCPConn).CloseWrite()
		}()
		b, _ := io.ReadAll(c)
		got <- b
	})
	f := startRelay(t, Config{Rules: Rules{Internet: true}})
	f.dialer.route("93.184.215.14:443", server)

	early := up[:100]
	a := ask(t, f.relay.SocketPath(), connect("example.com:443")+string(early))
	if a.status != 200 {
		t.Fatalf("status %d %s: %s", a.status, a.reason, a.body)
	}
	go func() {
		_, _ = a.conn.Write(up[100:])
		_ = a.conn.(*net.UnixConn).CloseWrite()
	}()
	back, err := io.ReadAll(a.br)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, down) {
		t.Errorf("downstream: %d bytes arrived, %d sent, equal=%v", len(back), len(down), bytes.Equal(back, down))
	}
	if sent := <-got; !bytes.Equal(sent, up) {
		t.Errorf("upstream: %d bytes arrived, %d sent", len(sent), len(up))
	}
	if d := f.dialer.dials(); len(d) != 1 || d[0] != "93.184.215.14:443" {
		t.Errorf("dialed %v", d)
	}
	if q := f.dns.questions(); len(q) != 1 {
		t.Errorf("resolver asked %v", q)
	}
	if s := f.relay.Stats(); s.Allowed != 1 || len(s.Refusals) != 0 {
		t.Errorf("stats %+v", s)
	}
}

func selfSigned(t testing.TB, name string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// A real TLS handshake through the tunnel reaches the loopback server's
// own certificate: the relay does not terminate TLS.
func TestRelayDoesNotTerminateTLS(t *testing.T) {
	cert := selfSigned(t, "example.com")
	server := loopserver.Start(t, func(c net.Conn) {
		tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})
		line, err := bufio.NewReader(tc).ReadString('\n')
		if err != nil {
			return
		}
		_, _ = io.WriteString(tc, "pong "+line)
		_ = tc.Close()
	})
	f := startRelay(t, Config{Rules: Rules{Internet: true}})
	f.dialer.route("93.184.215.14:443", server)

	c, err := DialRelay(context.Background(), f.relay.SocketPath(), "example.com:443")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	tc := tls.Client(c, &tls.Config{RootCAs: pool, ServerName: "example.com", MinVersion: tls.VersionTLS13})
	if err := tc.Handshake(); err != nil {
		t.Fatalf("TLS through the tunnel: %v", err)
	}
	if peer := tc.ConnectionState().PeerCertificates[0]; !bytes.Equal(peer.Raw, cert.Leaf.Raw) {
		t.Error("the certificate seen through the tunnel is not the server's")
	}
	if _, err := io.WriteString(tc, "ping\n"); err != nil {
		t.Fatal(err)
	}
	reply, err := bufio.NewReader(tc).ReadString('\n')
	if err != nil || reply != "pong ping\n" {
		t.Errorf("reply %q, %v", reply, err)
	}
}

// Every refusal answers 403 naming the host and the stable reason, never
// dials, and is counted; the first row is the positive control on the
// same relay.
func TestRelayRefusals(t *testing.T) {
	server := loopserver.Start(t, func(c net.Conn) { _, _ = io.WriteString(c, "hello") })
	f := startRelay(t, Config{Rules: Rules{Internet: true}})
	f.dialer.route("93.184.215.14:443", server)
	// Every other address has a route too, so a refusal cannot pass
	// because a dial happened to fail.
	for _, addrs := range f.dns.answers {
		for _, a := range addrs {
			if ip, err := netip.ParseAddr(a); err == nil {
				f.dialer.route(netip.AddrPortFrom(ip.Unmap(), 443).String(), server)
			}
		}
	}

	a := ask(t, f.relay.SocketPath(), connect("example.com:443"))
	if a.status != 200 {
		t.Fatalf("control: %d %s", a.status, a.reason)
	}
	if b, _ := io.ReadAll(a.br); string(b) != "hello" {
		t.Fatalf("control: tunnel carried %q", b)
	}
	dialsBefore := len(f.dialer.dials())

	cases := []struct {
		target string
		reason Reason
	}{
		{"private.test:443", ReasonNotPublicAddress},
		{"cgnat.test:443", ReasonNotPublicAddress},
		{"tailscale.test:443", ReasonNotPublicAddress},
		{"linklocal.test:443", ReasonNotPublicAddress},
		{"metadata.test:443", ReasonNotPublicAddress},
		{"imds6.test:443", ReasonNotPublicAddress},
		{"nat64-lo.test:443", ReasonNotPublicAddress},
		{"nat64-meta.test:443", ReasonNotPublicAddress},
		{"6to4-private.test:443", ReasonNotPublicAddress},
		{"teredo-lo.test:443", ReasonNotPublicAddress},
		{"mapped-private.test:443", ReasonNotPublicAddress},
		{"localhost:443", ReasonNotPublicAddress},
		{"own.test:443", ReasonOwnAddress},
		{"own-nat64.test:443", ReasonOwnAddress},
		{"neighbour.test:443", ReasonOwnNetwork},
		{"mixed.test:443", ReasonNotPublicAddress},
		{"mixed6.test:443", ReasonNotPublicAddress},
		{"empty.test:443", ReasonEmptyAnswer},
		{"servfail.test:443", ReasonResolveFailed},
		{"example.com:80", ReasonPortNotAllowed},
		{"example.com:22", ReasonPortNotAllowed},
		// Loopback in every spelling (NET-04).
		{"127.0.0.1:443", ReasonNotPublicAddress},
		{"127.0.0.2:443", ReasonNotPublicAddress},
		{"0.0.0.0:443", ReasonNotPublicAddress},
		{"[::1]:443", ReasonNotPublicAddress},
		{"[::]:443", ReasonNotPublicAddress},
		{"[::ffff:127.0.0.1]:443", ReasonNotPublicAddress},
		{"[::ffff:7f00:1]:443", ReasonNotPublicAddress},
		{"[::127.0.0.1]:443", ReasonNotPublicAddress},
		{"127.1:443", ReasonBadRequest},
		{"2130706433:443", ReasonBadRequest},
		{"0x7f000001:443", ReasonBadRequest},
		{"0177.0.0.1:443", ReasonBadRequest},
		{"0:443", ReasonBadRequest},
		{":443", ReasonBadRequest},
		{"[]:443", ReasonBadRequest},
		{"example.com:0443", ReasonBadRequest},
		{"example.com:+443", ReasonBadRequest},
	}
	for _, tc := range cases {
		a := ask(t, f.relay.SocketPath(), "CONNECT "+tc.target+" HTTP/1.1\r\n\r\n")
		if a.status != 403 || a.reason != string(tc.reason) {
			t.Errorf("%s: %d %q, want 403 %s", tc.target, a.status, a.reason, tc.reason)
			continue
		}
		if !strings.Contains(a.body, string(tc.reason)) {
			t.Errorf("%s: body %q does not name the reason", tc.target, a.body)
		}
		if tc.reason != ReasonBadRequest && !strings.Contains(a.body, mustRequest(t, connect(tc.target)).HostPort()) {
			t.Errorf("%s: body %q does not name the host", tc.target, a.body)
		}
		// The body never carries the resolved addresses.
		if strings.Contains(a.body, "10.0.0") || strings.Contains(a.body, "169.254") {
			t.Errorf("%s: body %q leaks an address", tc.target, a.body)
		}
		if rest, _ := io.ReadAll(a.br); len(rest) != 0 {
			t.Errorf("%s: bytes after the refusal: %q", tc.target, rest)
		}
	}
	if d := f.dialer.dials(); len(d) != dialsBefore {
		t.Errorf("refused requests were dialed: %v", d[dialsBefore:])
	}
	s := f.relay.Stats()
	total := int64(0)
	for _, n := range s.Refusals {
		total += n
	}
	if total != int64(len(cases)) || s.Refusals[string(ReasonPortNotAllowed)] != 2 || s.Allowed != 1 {
		t.Errorf("stats %+v, want %d refusals", s, len(cases))
	}
	if len(s.Latest) != latestKept || s.Latest[0].String() != `"example.com:+443" BadRequest` || s.Latest[1].String() != `"example.com:0443" BadRequest` {
		t.Errorf("latest %v", s.Latest)
	}
}

// Network none refuses everything, resolves nothing and dials nothing
// (NET-02, NET-19); the same request passes with the internet (control).
func TestRelayNetworkNone(t *testing.T) {
	server := loopserver.Start(t, func(c net.Conn) { _, _ = io.WriteString(c, "hi") })
	for _, internet := range []bool{true, false} {
		f := startRelay(t, Config{Rules: Rules{Internet: internet}})
		f.dialer.route("93.184.215.14:443", server)
		for _, raw := range []string{connect("example.com:443"), connect("8.8.8.8:443"), get("http://nas.lan:8080/")} {
			a := ask(t, f.relay.SocketPath(), raw)
			switch {
			case !internet && (a.status != 403 || a.reason != string(ReasonNetworkNone)):
				t.Errorf("none: %q got %d %s", raw, a.status, a.reason)
			case internet && raw == connect("example.com:443") && a.status != 200:
				t.Errorf("control: %q got %d %s", raw, a.status, a.reason)
			}
		}
		if !internet && (len(f.dns.questions()) != 0 || len(f.dialer.dials()) != 0) {
			t.Errorf("none: asked %v, dialed %v", f.dns.questions(), f.dialer.dials())
		}
	}
}

// rebindingDNS answers a public address first and loopback after (NET-9).
type rebindingDNS struct {
	mu    sync.Mutex
	calls int
}

func (d *rebindingDNS) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	if d.calls == 1 {
		return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// The relay resolves once and dials exactly the address it checked: a
// name that rebinds to loopback after the check is never dialed by name.
func TestRelayDialsTheCheckedAddress(t *testing.T) {
	server := loopserver.Start(t, func(c net.Conn) { _, _ = io.WriteString(c, "public") })
	dns := &rebindingDNS{}
	f := startRelay(t, Config{Rules: Rules{Internet: true}, Resolver: dns})
	f.dialer.route("93.184.215.14:443", server)
	f.dialer.route("127.0.0.1:443", server)
	a := ask(t, f.relay.SocketPath(), connect("rebind.test:443"))
	if a.status != 200 {
		t.Fatalf("status %d %s", a.status, a.reason)
	}
	if d := f.dialer.dials(); len(d) != 1 || d[0] != "93.184.215.14:443" || dns.calls != 1 {
		t.Errorf("dialed %v after %d lookups", d, dns.calls)
	}
	// The second lookup would say loopback, and is refused (control that
	// the rebinding resolver really rebinds).
	a = ask(t, f.relay.SocketPath(), connect("rebind.test:443"))
	if a.status != 403 || a.reason != string(ReasonNotPublicAddress) {
		t.Errorf("second lookup: %d %s", a.status, a.reason)
	}
}

// A loopback target is spliced only when the listener-owner check passes,
// and the check is told exactly the address dialed and whether the owner
// typed the entry. No check configured means refusal.
func TestRelayListenerCheck(t *testing.T) {
	server := loopserver.Start(t, func(c net.Conn) { _, _ = io.WriteString(c, "svc") })
	rules := Rules{Listed: []Listed{mustListed(t, "svc.local:9000", false), mustListed(t, "printer.lan:631", true)}}

	type call struct {
		addr       netip.AddrPort
		ownerTyped bool
	}
	var mu sync.Mutex
	var calls []call
	allow := true
	check := func(_ context.Context, addr netip.AddrPort, ownerTyped bool) error {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, call{addr, ownerTyped})
		if !allow {
			return errors.New("port 9000 belongs to another add-on's compose project")
		}
		return nil
	}
	f := startRelay(t, Config{Rules: rules, ListenerCheck: check})
	f.dialer.route("127.0.0.1:9000", server)
	f.dialer.route("192.168.1.30:631", server)

	a := ask(t, f.relay.SocketPath(), connect("svc.local:9000"))
	if a.status != 200 {
		t.Fatalf("control: %d %s", a.status, a.reason)
	}
	if b, _ := io.ReadAll(a.br); string(b) != "svc" {
		t.Errorf("tunnel carried %q", b)
	}
	// A LAN entry needs no listener check.
	if a := ask(t, f.relay.SocketPath(), connect("printer.lan:631")); a.status != 200 {
		t.Errorf("printer: %d %s", a.status, a.reason)
	}
	mu.Lock()
	if len(calls) != 1 || calls[0] != (call{netip.MustParseAddrPort("127.0.0.1:9000"), false}) {
		t.Errorf("check calls %v", calls)
	}
	allow = false
	mu.Unlock()
	if a := ask(t, f.relay.SocketPath(), connect("svc.local:9000")); a.status != 403 || a.reason != string(ReasonListenerRefused) {
		t.Errorf("refused by the check: %d %s", a.status, a.reason)
	}

	g := startRelay(t, Config{Rules: rules})
	g.dialer.route("127.0.0.1:9000", server)
	if a := ask(t, g.relay.SocketPath(), connect("svc.local:9000")); a.status != 403 || a.reason != string(ReasonListenerRefused) {
		t.Errorf("no check configured: %d %s", a.status, a.reason)
	}
}

// Plain HTTP reaches a listed owner-typed entry with one request per
// connection: the upstream sees origin form, its own Host, no hop-by-hop
// or Upgrade headers, and a pipelined second request is never sent; the
// answer carries Connection: close (NET-12, NET-14, NET-18).
func TestRelayPlainHTTP(t *testing.T) {
	type seen struct {
		method, uri, host string
		header            http.Header
		body              string
	}
	requests := make(chan seen, 10)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			requests <- seen{r.Method, r.RequestURI, r.Host, r.Header.Clone(), string(b)}
			w.Header().Set("Keep-Alive", "timeout=5")
			_, _ = io.WriteString(w, "answer to "+r.RequestURI)
		}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	f := startRelay(t, Config{Rules: Rules{Internet: true, Listed: []Listed{mustListed(t, "http://nas.lan:8080", true)}}})
	f.dialer.route("192.168.1.20:8080", ln.Addr().String())

	raw := "GET http://nas.lan:8080/x?y=1 HTTP/1.1\r\nHost: nas.lan:8080\r\nConnection: keep-alive, Upgrade, X-Hop\r\nUpgrade: h2c\r\nX-Hop: 1\r\nProxy-Authorization: Basic eDp5\r\nX-Test: kept\r\n\r\n" +
		"GET http://nas.lan:8080/second HTTP/1.1\r\nHost: nas.lan:8080\r\n\r\n"
	c, err := net.Dial("unix", f.relay.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// A relay that refuses before reading (too many connections) may close
	// first: its answer is still there to read.
	if _, err := io.WriteString(c, raw); err != nil && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatal(err)
	}
	all, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(all)), nil)
	if err != nil {
		t.Fatalf("%q: %v", all, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "answer to /x?y=1" || !resp.Close || resp.Header.Get("Keep-Alive") != "" {
		t.Errorf("answer %d %q close=%v header=%v", resp.StatusCode, body, resp.Close, resp.Header)
	}
	if bytes.Count(all, []byte("HTTP/1.1 ")) != 1 {
		t.Errorf("more than one answer on one connection: %q", all)
	}
	got := <-requests
	if got.uri != "/x?y=1" || got.host != "nas.lan:8080" || got.header.Get("X-Test") != "kept" {
		t.Errorf("upstream saw %+v", got)
	}
	for _, h := range []string{"Upgrade", "X-Hop", "Proxy-Authorization", "Keep-Alive"} {
		if got.header.Get(h) != "" {
			t.Errorf("upstream saw the hop-by-hop header %s", h)
		}
	}
	select {
	case second := <-requests:
		t.Errorf("a second request reached the upstream: %+v", second)
	case <-time.After(100 * time.Millisecond):
	}

	// A body of exactly Content-Length bytes, and nothing after it.
	a := ask(t, f.relay.SocketPath(), "POST http://nas.lan:8080/p HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloEXTRA")
	if a.status != 200 {
		t.Fatalf("POST: %d %s", a.status, a.reason)
	}
	if got := <-requests; got.method != "POST" || got.body != "hello" || got.host != "nas.lan:8080" {
		t.Errorf("POST upstream saw %+v", got)
	}

	for _, tc := range []struct {
		raw    string
		reason Reason
	}{
		{get("http://nas.lan:8081/"), ReasonPlainHTTPNotListed},
		{get("http://example.com/"), ReasonPlainHTTPNotListed}, // the internet shape never carries plain HTTP
		{"GET http://nas.lan:8080/ HTTP/1.1\r\nHost: gateway:3001\r\n\r\n", ReasonBadRequest},
		{"GET /x HTTP/1.1\r\nHost: nas.lan:8080\r\n\r\n", ReasonBadRequest},
		{connect("nas.lan:8080"), ReasonPortNotAllowed},
	} {
		if a := ask(t, f.relay.SocketPath(), tc.raw); a.status != 403 || a.reason != string(tc.reason) {
			t.Errorf("%q: %d %s, want %s", tc.raw, a.status, a.reason, tc.reason)
		}
	}
}

// An upstream that answers 101 never turns the connection into a raw
// stream.
func TestRelayPlainHTTPRefusesUpgrade(t *testing.T) {
	server := loopserver.Start(t, func(c net.Conn) {
		_, _ = bufio.NewReader(c).ReadString('\n')
		_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\nRAW-STREAM")
		time.Sleep(50 * time.Millisecond)
	})
	f := startRelay(t, Config{Rules: Rules{Listed: []Listed{mustListed(t, "http://nas.lan:8080", true)}}})
	f.dialer.route("192.168.1.20:8080", server)
	a := ask(t, f.relay.SocketPath(), get("http://nas.lan:8080/"))
	if a.status != 502 || strings.Contains(a.body, "RAW-STREAM") {
		t.Errorf("101 upstream: %d %q", a.status, a.body)
	}
}

// A refused CONNECT closes the connection: bytes behind it are never read
// as a second request (NET-15).
func TestRelayRefusalEndsTheConnection(t *testing.T) {
	f := startRelay(t, Config{Rules: Rules{Internet: true, Listed: []Listed{mustListed(t, "http://nas.lan:8080", true)}}})
	f.dialer.route("192.168.1.20:8080", loopserver.Start(t, func(c net.Conn) {}))
	a := ask(t, f.relay.SocketPath(), connect("private.test:443")+get("http://nas.lan:8080/"))
	if a.status != 403 || a.reason != string(ReasonNotPublicAddress) {
		t.Fatalf("%d %s", a.status, a.reason)
	}
	if rest, _ := io.ReadAll(a.br); len(rest) != 0 {
		t.Errorf("bytes after the refusal: %q", rest)
	}
	if d := f.dialer.dials(); len(d) != 0 {
		t.Errorf("dialed %v", d)
	}
	if s := f.relay.Stats(); len(s.Latest) != 1 {
		t.Errorf("refusals %v", s.Latest)
	}
}

// Garbage, slow and oversized heads are refused (NET-20); the control is a
// good request on the same relay.
func TestRelayBadClients(t *testing.T) {
	f := startRelay(t, Config{Rules: Rules{Internet: true}, HeadTimeout: 300 * time.Millisecond})
	f.dialer.route("93.184.215.14:443", loopserver.Start(t, func(c net.Conn) {}))
	if a := ask(t, f.relay.SocketPath(), connect("example.com:443")); a.status != 200 {
		t.Fatalf("control: %d %s", a.status, a.reason)
	}
	clientHello := "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + strings.Repeat("\x00", 40) + "\r\n\r\n"
	for name, raw := range map[string]string{
		"TLS ClientHello": clientHello,
		"SOCKS5 greeting": "\x05\x01\x00\r\n\r\n",
		"huge header":     "CONNECT example.com:443 HTTP/1.1\r\nX: " + strings.Repeat("a", 2*MaxHeadBytes) + "\r\n\r\n",
		"HTTP/2 preface":  "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"slow (no end)":   "CONNECT example.com:443 HTTP/1.1\r\nX: 1\r\n",
	} {
		a := ask(t, f.relay.SocketPath(), raw)
		if a.status != 403 || a.reason != string(ReasonBadRequest) {
			t.Errorf("%s: %d %s", name, a.status, a.reason)
		}
	}
	if d := f.dialer.dials(); len(d) != 1 {
		t.Errorf("dialed %v", d)
	}
}

func TestRelayDialFailed(t *testing.T) {
	f := startRelay(t, Config{Rules: Rules{Internet: true}})
	// No route for 93.184.215.14: the dial fails.
	a := ask(t, f.relay.SocketPath(), connect("example.com:443"))
	if a.status != 502 || a.reason != string(ReasonDialFailed) {
		t.Errorf("%d %s", a.status, a.reason)
	}
	// Both checked addresses were tried, and nothing else.
	if d := f.dialer.dials(); len(d) != 2 || d[0] != "93.184.215.14:443" || d[1] != "[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:443" {
		t.Errorf("dialed %v", d)
	}
}

func TestRelayHostFactsUnavailable(t *testing.T) {
	f := startRelay(t, Config{Rules: Rules{Internet: true}, OwnNetwork: func() (OwnNetwork, error) {
		return OwnNetwork{}, errors.New("netlink: operation not permitted")
	}})
	if a := ask(t, f.relay.SocketPath(), connect("example.com:443")); a.status != 403 || a.reason != string(ReasonHostFactsUnavailable) {
		t.Errorf("%d %s", a.status, a.reason)
	}
	if len(f.dialer.dials()) != 0 || len(f.dns.questions()) != 0 {
		t.Error("resolved or dialed without host facts")
	}
}

// The socket lives in a fresh 0700 folder; Close ends live tunnels and
// removes the socket and the folder. A folder that already exists is
// never used.
func TestRelaySocketFolder(t *testing.T) {
	hold := make(chan struct{})
	server := loopserver.Start(t, func(c net.Conn) { <-hold })
	defer close(hold)
	dir := filepath.Join(t.TempDir(), "relay")
	f := startRelay(t, Config{SocketDir: dir, Rules: Rules{Internet: true}})
	f.dialer.route("93.184.215.14:443", server)
	if f.relay.SocketPath() != filepath.Join(dir, SocketName) {
		t.Errorf("socket path %s", f.relay.SocketPath())
	}
	fi, err := os.Lstat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Fatalf("folder %v %v", fi.Mode(), err)
	}
	if fi, err := os.Lstat(f.relay.SocketPath()); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket %v", err)
	}

	a := ask(t, f.relay.SocketPath(), connect("example.com:443"))
	if a.status != 200 {
		t.Fatalf("tunnel: %d", a.status)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(a.br)
		done <- err
	}()
	if err := f.relay.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close left a live tunnel open")
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the folder survived Close: %v", err)
	}
	if _, err := net.Dial("unix", f.relay.SocketPath()); err == nil {
		t.Error("the socket still answers after Close")
	}
	if err := f.relay.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// A planted folder is refused; a fresh one (control) is not.
	planted := filepath.Join(t.TempDir(), "planted")
	if err := os.Mkdir(planted, 0o777); err != nil {
		t.Fatal(err)
	}
	if r, err := New(Config{SocketDir: planted}); err == nil {
		_ = r.Close()
		t.Error("an existing folder was used")
	}
	if _, err := os.Lstat(planted); err != nil {
		t.Errorf("the planted folder was removed: %v", err)
	}
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	fi, err = os.Lstat(filepath.Dir(r.SocketPath()))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("default folder %v %v", fi.Mode(), err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Dir(r.SocketPath())); !os.IsNotExist(err) {
		t.Errorf("the default folder survived Close: %v", err)
	}
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 100))
	if r, err := New(Config{SocketDir: long}); err == nil {
		_ = r.Close()
		t.Error("a socket path over 107 bytes was accepted")
	} else if _, statErr := os.Lstat(long); !os.IsNotExist(statErr) {
		t.Errorf("the folder was left behind after refusing a long path: %v", statErr)
	}
}

// The latest refusals are the newest ten, newest first; OnRefusal sees
// each one.
func TestRelayStatsAndOnRefusal(t *testing.T) {
	var mu sync.Mutex
	var seen []Refusal
	f := startRelay(t, Config{OnRefusal: func(r Refusal) {
		mu.Lock()
		seen = append(seen, r)
		mu.Unlock()
	}})
	for i := 1; i <= 12; i++ {
		ask(t, f.relay.SocketPath(), connect(fmt.Sprintf("host%d.test:443", i)))
	}
	s := f.relay.Stats()
	if s.Refusals[string(ReasonNetworkNone)] != 12 || len(s.Latest) != 10 {
		t.Fatalf("stats %+v", s)
	}
	if s.Latest[0].String() != "host12.test:443 NetworkNone" || s.Latest[9].String() != "host3.test:443 NetworkNone" {
		t.Errorf("latest %v", s.Latest)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 12 || seen[0].Target != "host1.test:443" || seen[0].Detail == "" || seen[0].Time.IsZero() {
		t.Errorf("OnRefusal saw %+v", seen)
	}
}

func TestRelayTooManyConnections(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	f := startRelay(t, Config{Rules: Rules{Internet: true}, MaxConns: 1})
	f.dialer.route("93.184.215.14:443", loopserver.Start(t, func(c net.Conn) { <-hold }))
	if a := ask(t, f.relay.SocketPath(), connect("example.com:443")); a.status != 200 {
		t.Fatalf("first: %d", a.status)
	}
	if a := ask(t, f.relay.SocketPath(), connect("example.com:443")); a.status != 503 || a.reason != string(ReasonTooManyConnections) {
		t.Errorf("second: %d %s", a.status, a.reason)
	}
}

// The in-namespace side's helpers: Forward carries a proxy client's bytes
// to the relay unchanged; DialRelay opens a tunnel for a listed-port
// forwarder and reports a refusal with its reason.
func TestForwardAndDialRelay(t *testing.T) {
	server := loopserver.Start(t, func(c net.Conn) { _, _ = io.WriteString(c, "through") })
	f := startRelay(t, Config{Rules: Rules{Internet: true}})
	f.dialer.route("93.184.215.14:443", server)

	proxy := loopserver.Start(t, func(c net.Conn) {
		_ = Forward(context.Background(), c, f.relay.SocketPath())
	})
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_, _ = io.WriteString(c, connect("example.com:443"))
	all, _ := io.ReadAll(c)
	if string(all) != "HTTP/1.1 200 Connection established\r\n\r\nthrough" {
		t.Errorf("through Forward: %q", all)
	}

	tc, err := DialRelay(context.Background(), f.relay.SocketPath(), "example.com:443")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(tc); string(b) != "through" {
		t.Errorf("through DialRelay: %q", b)
	}
	_ = tc.Close()

	_, err = DialRelay(context.Background(), f.relay.SocketPath(), "private.test:443")
	var re *RefusedError
	if !errors.As(err, &re) || re.Status != 403 || re.Reason != ReasonNotPublicAddress {
		t.Errorf("refusal: %v", err)
	}
	if _, err := DialRelay(context.Background(), filepath.Join(t.TempDir(), "none.sock"), "example.com:443"); err == nil {
		t.Error("dialing a missing socket succeeded")
	}
}
