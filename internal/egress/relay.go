package egress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/addonwall/addonwall/internal/splice"
)

// connectEstablished is the relay's whole answer when a tunnel opens.
const connectEstablished = "HTTP/1.1 200 Connection established\r\n\r\n"

// SocketName is the relay socket's file name inside Config.SocketDir.
const SocketName = "relay.sock"

// refusalLogsPerSecond is how many refusals a second are logged at the
// default level.
const refusalLogsPerSecond = 5

// latestKept is how many refusals Stats.Latest holds (the status field
// that shows them allows 10).
const latestKept = 10

// Resolver resolves a DNS name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer opens a TCP connection; *net.Dialer is one. The relay only ever
// hands it an IP literal and a port, never a name.
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// ListenerCheck is the listener-owner check: it returns nil only when the
// listener on addr may be reached by this wall. ownerTyped says whether
// the owner typed the entry (a manifest default never reaches a process
// of the gateway's user).
type ListenerCheck func(ctx context.Context, addr netip.AddrPort, ownerTyped bool) error

// Config configures one relay: one per walled spawn.
type Config struct {
	// SocketDir is the folder the relay makes (mode 0700) to hold its
	// socket, and removes at Close. It must not exist yet, so a folder
	// someone else planted is never used; its parent must exist. If
	// empty, a fresh folder is made under os.TempDir().
	SocketDir string

	// Rules are what the wall may reach. The zero value is network
	// "none": every request is refused and nothing is resolved.
	Rules Rules

	// Resolver resolves names, once per request. If nil,
	// net.DefaultResolver is used.
	Resolver Resolver

	// Dialer dials the checked address. If nil, a net.Dialer is used.
	// Tests inject one that maps a checked public address to a loopback
	// server; the policy still judges the real resolved address.
	Dialer Dialer

	// ListenerCheck runs before any loopback or own-address connection is
	// spliced. If nil, every such connection is refused
	// (ListenerRefused): there is no safe default.
	ListenerCheck ListenerCheck

	// OwnNetwork reads this host's addresses and links, once per request.
	// If nil, GatherOwnNetwork is used. An error refuses the request
	// (HostFactsUnavailable).
	OwnNetwork func() (OwnNetwork, error)

	// Log receives a line per refusal (past five a second, at V(1)) and
	// per tunnel at V(1). If zero, nothing is logged. Resolved addresses
	// are logged, never payload bytes.
	Log logr.Logger

	// OnRefusal, if non-nil, is called for every refusal after it is
	// counted, on the connection's goroutine; it must not block for long.
	OnRefusal func(Refusal)

	// HeadTimeout bounds how long a client may take to send its request
	// head. If zero, 10 seconds.
	HeadTimeout time.Duration

	// DialTimeout bounds the lookup, the listener check and the dial
	// together. If zero, 10 seconds.
	DialTimeout time.Duration

	// MaxConns bounds the connections served at once; a connection over
	// the bound is refused (TooManyConnections). If zero, 256.
	MaxConns int
}

// Refusal is one refused request.
type Refusal struct {
	Time time.Time
	// Target is the requested "host:port", normalized; for a request that
	// could not be read, the raw target quoted (or "-" when there was
	// none).
	Target string
	Reason Reason
	// Detail is for logs; it is not sent into the wall.
	Detail string
}

// String is the refusal as status shows it: "host:port Reason".
func (r Refusal) String() string { return r.Target + " " + string(r.Reason) }

// Stats are the relay's counters, for status.
type Stats struct {
	// Allowed counts requests that reached their target.
	Allowed int64
	// Refusals counts refusals by reason.
	Refusals map[string]int64
	// Latest are the newest refusals, newest first, at most 10.
	Latest []Refusal
}

// Relay is the host side of one wall's way out. It listens on a unix
// socket and judges every connection from scratch: the socket is the
// wall's identity, so nothing in a request is trusted to say who sent it.
type Relay struct {
	cfg  Config
	dir  string
	path string
	ln   *net.UnixListener
	log  logr.Logger
	sem  chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
	allowed  int64
	refusals map[string]int64
	latest   []Refusal

	logSecond int64 // the second logLines counts refusal log lines in
	logLines  int
}

// New makes the socket folder, listens on the socket and starts serving.
func New(cfg Config) (*Relay, error) {
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dialer == nil {
		cfg.Dialer = &net.Dialer{}
	}
	if cfg.OwnNetwork == nil {
		cfg.OwnNetwork = GatherOwnNetwork
	}
	if cfg.HeadTimeout <= 0 {
		cfg.HeadTimeout = 10 * time.Second
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 256
	}
	log := cfg.Log
	if log.GetSink() == nil {
		log = logr.Discard()
	}

	dir, err := makeSocketDir(cfg.SocketDir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, SocketName)
	// sockaddr_un holds 108 bytes including the final NUL.
	if len(path) > 107 {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("relay socket path %s is %d bytes, over the 107 a unix socket allows; no relay is started, so the wall does not start: choose a shorter SocketDir", path, len(path))
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("listening on the relay socket %s (the wall does not start): %w", path, err)
	}
	ln.SetUnlinkOnClose(true)

	ctx, cancel := context.WithCancel(context.Background())
	r := &Relay{
		cfg: cfg, dir: dir, path: path, ln: ln, log: log.WithValues("socket", path),
		sem: make(chan struct{}, cfg.MaxConns), ctx: ctx, cancel: cancel,
		conns: map[net.Conn]struct{}{}, refusals: map[string]int64{},
	}
	r.wg.Add(1)
	go r.acceptLoop()
	return r, nil
}

// makeSocketDir makes a fresh 0700 folder: never one that already exists,
// so a folder planted by someone else (with a wider mode or another owner)
// is never used.
func makeSocketDir(dir string) (string, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", "addonwall-relay-")
		if err != nil {
			return "", fmt.Errorf("making the relay's socket folder (the wall does not start): %w", err)
		}
		dir = d
	} else if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("making the relay's socket folder %s, which must not exist yet (the wall does not start): %w", dir, err)
	}
	// The umask can only narrow the mode, but say it outright.
	if err := os.Chmod(dir, 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("setting the relay's socket folder %s to 0700 (the wall does not start): %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("the relay's socket folder %s is not a 0700 folder after making it (the wall does not start): %v", dir, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("the relay's socket folder %s is owned by uid %d, not by this process (the wall does not start)", dir, st.Uid)
	}
	return dir, nil
}

// SocketPath is the unix socket the in-namespace entry connects to.
func (r *Relay) SocketPath() string { return r.path }

// Stats returns a copy of the counters.
func (r *Relay) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Stats{Allowed: r.allowed, Refusals: make(map[string]int64, len(r.refusals)), Latest: append([]Refusal(nil), r.latest...)}
	for k, v := range r.refusals {
		s.Refusals[k] = v
	}
	return s
}

// Close stops accepting, ends every live connection and tunnel, waits for
// them, and removes the socket and its folder.
func (r *Relay) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.cancel()
	err := r.ln.Close()
	r.wg.Wait()
	if rmErr := os.RemoveAll(r.dir); rmErr != nil {
		return fmt.Errorf("removing the relay's socket folder %s: %w", r.dir, rmErr)
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("closing the relay socket %s: %w", r.path, err)
	}
	return nil
}

// track registers a connection so Close can end it; it returns false
// (and closes the connection) when the relay is already closing.
func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		_ = c.Close()
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	_ = c.Close()
}

func (r *Relay) acceptLoop() {
	defer r.wg.Done()
	backoff := time.Duration(0)
	for {
		c, err := r.ln.Accept()
		if err != nil {
			if r.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors or similar: wait and try again
			// rather than spin or give up on the wall's way out.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			r.log.Error(err, "accepting a relay connection failed; retrying", "after", backoff)
			select {
			case <-time.After(backoff):
			case <-r.ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		select {
		case r.sem <- struct{}{}:
		default:
			// Over the bound: answer without a goroutine, and briefly.
			r.refuse(c, Refusal{Target: "-", Reason: ReasonTooManyConnections, Detail: fmt.Sprintf("over %d connections at once", r.cfg.MaxConns)}, "")
			_ = c.Close()
			continue
		}
		if !r.track(c) {
			<-r.sem
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer func() { <-r.sem }()
			defer r.untrack(c)
			r.serve(c)
		}()
	}
}

// serve handles one connection: one request, judged from scratch.
func (r *Relay) serve(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(r.cfg.HeadTimeout))
	head, rest, err := ReadHead(c)
	if err != nil {
		r.refuse(c, Refusal{Target: "-", Reason: ReasonBadRequest, Detail: err.Error()}, "")
		return
	}
	req, err := ParseRequest(head)
	if err != nil {
		target := "-"
		var pe *ParseError
		if errors.As(err, &pe) && pe.Target != "" {
			target = quoteTarget(pe.Target)
		}
		r.refuse(c, Refusal{Target: target, Reason: ReasonBadRequest, Detail: err.Error()}, "")
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	target := req.HostPort()

	own, err := r.cfg.OwnNetwork()
	if err != nil {
		r.refuse(c, Refusal{Target: target, Reason: ReasonHostFactsUnavailable, Detail: err.Error()}, req.Method)
		return
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.cfg.DialTimeout)
	defer cancel()
	v := Judge(ctx, req, r.cfg.Rules, Facts{Own: own, Lookup: r.lookup})
	if !v.Allow {
		r.refuse(c, Refusal{Target: target, Reason: v.Reason, Detail: v.Detail}, req.Method)
		return
	}
	up, reason, detail := r.dial(ctx, v)
	if reason != "" {
		r.refuse(c, Refusal{Target: target, Reason: reason, Detail: detail}, req.Method)
		return
	}
	if !r.track(up) {
		return
	}
	defer r.untrack(up)
	r.mu.Lock()
	r.allowed++
	r.mu.Unlock()
	r.log.V(1).Info("relaying", "target", target, "addr", up.RemoteAddr().String(), "kind", req.Kind.String())

	switch req.Kind {
	case KindConnect:
		if _, err := io.WriteString(c, connectEstablished); err != nil {
			return
		}
		// Bytes the client sent right behind its head are the start of
		// the tunnel's payload.
		if len(rest) > 0 {
			if _, err := up.Write(rest); err != nil {
				return
			}
		}
		splice.Conns(c, up)
	case KindPlainHTTP:
		if err := forwardPlain(c, up, req, rest); err != nil {
			r.log.Info("plain-HTTP request ended early", "target", target, "error", err.Error())
		}
	}
}

func (r *Relay) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	return r.cfg.Resolver.LookupNetIP(ctx, "ip", host)
}

// dial tries each checked target in order. A loopback or own-address
// target is checked after the connection is made and before a byte is
// spliced: then the listener judged is the one actually connected to,
// not one that held the port a moment earlier.
func (r *Relay) dial(ctx context.Context, v Verdict) (net.Conn, Reason, string) {
	var failures []string
	for _, t := range v.Targets {
		up, err := r.cfg.Dialer.DialContext(ctx, "tcp", t.Addr.String())
		if err != nil {
			failures = append(failures, err.Error())
			continue
		}
		if t.CheckListener {
			if r.cfg.ListenerCheck == nil {
				_ = up.Close()
				return nil, ReasonListenerRefused, fmt.Sprintf("%s needs the listener-owner check and none is configured", t.Addr)
			}
			if err := r.cfg.ListenerCheck(ctx, t.Addr, v.OwnerTyped); err != nil {
				_ = up.Close()
				return nil, ReasonListenerRefused, fmt.Sprintf("listener on %s: %v", t.Addr, err)
			}
		}
		return up, "", ""
	}
	return nil, ReasonDialFailed, strings.Join(failures, "; ")
}

// refuse counts a refusal, logs it and answers the client. The answer
// names the host and the reason but not the detail, which can hold
// resolved addresses the wall has no other way to learn.
func (r *Relay) refuse(c net.Conn, rf Refusal, method string) {
	rf.Time = time.Now()
	r.mu.Lock()
	r.refusals[string(rf.Reason)]++
	r.latest = append([]Refusal{rf}, r.latest...)
	if len(r.latest) > latestKept {
		r.latest = r.latest[:latestKept]
	}
	// A wall that hammers refused targets must not flood the gateway's
	// log: past a few lines a second, refusals are logged at V(1) only
	// (they are all counted, and OnRefusal sees every one).
	sec := rf.Time.Unix()
	if sec != r.logSecond {
		r.logSecond, r.logLines = sec, 0
	}
	r.logLines++
	loud := r.logLines <= refusalLogsPerSecond
	r.mu.Unlock()
	log := r.log
	if !loud {
		log = log.V(1)
	}
	log.Info("refused", "target", rf.Target, "reason", string(rf.Reason), "detail", rf.Detail)
	if r.cfg.OnRefusal != nil {
		r.cfg.OnRefusal(rf)
	}

	status := "403 Forbidden"
	switch rf.Reason {
	case ReasonDialFailed:
		status = "502 Bad Gateway"
	case ReasonTooManyConnections:
		status = "503 Service Unavailable"
	}
	what := "request"
	if method != "" {
		what = method + " to " + rf.Target
	} else if rf.Target != "-" {
		what = "request for " + rf.Target
	}
	body := fmt.Sprintf("addonwall refused %s: %s\n", what, rf.Reason)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Addonwall-Reason: %s\r\n\r\n%s",
		status, len(body), rf.Reason, body)
	// Whatever the client sent after its head is never read: a refused
	// connection carries no second request.
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// quoteTarget makes a raw, unparsed target safe to log and to echo: ASCII
// only, quoted, and short.
func quoteTarget(s string) string {
	const maxLen = 120
	if len(s) > maxLen {
		s = s[:maxLen] + "…"
	}
	return strconv.QuoteToASCII(s)
}

// ReadHead reads one request head from r: everything up to and including
// the first empty line. rest holds any bytes read past it. A head is cut
// off at MaxHeadBytes. An empty line after a bare LF also ends the head,
// so a client using bare LFs is refused at once rather than at the
// timeout.
func ReadHead(r io.Reader) (head, rest []byte, err error) {
	buf := make([]byte, 0, 1024)
	chunk := make([]byte, 1024)
	for {
		n, err := r.Read(chunk)
		start := max(len(buf)-3, 0)
		buf = append(buf, chunk[:n]...)
		if end := headEnd(buf, start); end >= 0 {
			return buf[:end], buf[end:], nil
		}
		if len(buf) > MaxHeadBytes {
			return nil, nil, fmt.Errorf("the request head is over %d bytes", MaxHeadBytes)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, nil, fmt.Errorf("the connection ended before the request head did (%d bytes read)", len(buf))
			}
			return nil, nil, fmt.Errorf("reading the request head: %w", err)
		}
	}
}

// headEnd returns the offset just past the first empty line at or after
// from, or -1.
func headEnd(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i+1 < len(b) && b[i+1] == '\n' {
			return i + 2
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return i + 3
		}
	}
	return -1
}

// hopByHop are the request headers that belong to one connection, not to
// the request: they are never forwarded. Upgrade is among them, so a
// plain-HTTP request can never turn into a raw stream.
var hopByHop = map[string]bool{
	"connection": true, "proxy-connection": true, "keep-alive": true,
	"proxy-authorization": true, "proxy-authenticate": true, "te": true,
	"trailer": true, "transfer-encoding": true, "upgrade": true, "expect": true,
}

// forwardPlain sends one plain-HTTP request upstream in origin form and
// copies one answer back with "Connection: close". Bytes the client sends
// after the request's body are never read.
func forwardPlain(client, up net.Conn, req Request, rest []byte) error {
	drop := map[string]bool{}
	for _, h := range req.Header {
		if strings.EqualFold(h.Name, "Connection") {
			for _, tok := range strings.Split(h.Value, ",") {
				drop[strings.ToLower(strings.TrimSpace(tok))] = true
			}
		}
	}
	var b bytes.Buffer
	b.WriteString(req.Method + " " + req.Path + " HTTP/1.1\r\n")
	// The upstream is told the listed target it was reached as, whatever
	// the client wrote (ParseRequest already refused a Host that
	// disagrees with the target).
	hostHeader := req.HostPort()
	if req.Port == 80 {
		hostHeader = strings.TrimSuffix(hostHeader, ":80")
	}
	b.WriteString("Host: " + hostHeader + "\r\n")
	for _, h := range req.Header {
		n := strings.ToLower(h.Name)
		if hopByHop[n] || drop[n] {
			continue
		}
		b.WriteString(h.Name + ": " + h.Value + "\r\n")
	}
	b.WriteString("Connection: close\r\n\r\n")
	if _, err := up.Write(b.Bytes()); err != nil {
		return fmt.Errorf("sending the request head upstream: %w", err)
	}

	bodyErr := make(chan error, 1)
	go func() {
		body := io.LimitReader(io.MultiReader(bytes.NewReader(rest), client), req.ContentLength)
		n, err := io.Copy(up, body)
		if err == nil && n < req.ContentLength {
			err = fmt.Errorf("the client sent %d of %d body bytes", n, req.ContentLength)
		}
		bodyErr <- err
	}()

	br := bufio.NewReader(up)
	var resp *http.Response
	for {
		var err error
		resp, err = http.ReadResponse(br, &http.Request{Method: req.Method})
		if err != nil {
			writeBadGateway(client, "the upstream answer could not be read")
			return fmt.Errorf("reading the upstream answer: %w", err)
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			_ = resp.Body.Close()
			writeBadGateway(client, "the upstream tried to switch protocols")
			return fmt.Errorf("the upstream answered 101 Switching Protocols; refused")
		}
		if resp.StatusCode >= 200 {
			break
		}
		_ = resp.Body.Close() // an informational answer (103 Early Hints): dropped
	}
	defer func() { _ = resp.Body.Close() }()
	for _, tok := range resp.Header.Values("Connection") {
		for _, t := range strings.Split(tok, ",") {
			resp.Header.Del(strings.TrimSpace(t))
		}
	}
	for _, h := range []string{"Connection", "Proxy-Connection", "Keep-Alive", "Upgrade", "Te"} {
		resp.Header.Del(h)
	}
	resp.Close = true
	if err := resp.Write(client); err != nil {
		return fmt.Errorf("copying the answer to the client: %w", err)
	}
	select {
	case err := <-bodyErr:
		return err
	default:
		// The upstream answered before reading the whole body; the
		// connection ends here either way.
		return nil
	}
}

func writeBadGateway(c net.Conn, why string) {
	body := "addonwall: " + why + "\n"
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\nX-Addonwall-Reason: %s\r\n\r\n%s", len(body), ReasonDialFailed, body)
}
