package doors

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
)

// seen is what the stub gateway received.
type seen struct {
	Method, Path, RequestURI, Addon, Body string
	TokenHeader                           string
}

type stubGateway struct {
	mu   sync.Mutex
	reqs []seen
	// answer, if set, writes the answer instead of "ok".
	answer func(w http.ResponseWriter)
}

func (g *stubGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	g.mu.Lock()
	g.reqs = append(g.reqs, seen{r.Method, r.URL.Path, r.RequestURI, AddonFrom(r.Context()), string(body), r.Header.Get(TokenHeader)})
	answer := g.answer
	g.mu.Unlock()
	if answer != nil {
		answer(w)
		return
	}
	_, _ = io.WriteString(w, "ok")
}

func (g *stubGateway) got() []seen {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]seen(nil), g.reqs...)
}

type doorFixture struct {
	addr string
	gw   *stubGateway
	tok  string
	log  *syncBuffer
	// answers collects every answer the tests read, for DOOR-09.
	answers *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) add(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(p)
	s.b.WriteByte('\n')
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startDoors(t *testing.T) *doorFixture {
	t.Helper()
	var reg Registry
	kiosk, _ := Core("kiosk")
	tok, revoke, err := reg.Grant("kiosk", kiosk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(revoke)
	logs := &syncBuffer{}
	log := funcr.New(func(prefix, args string) { logs.add(prefix + " " + args) }, funcr.Options{Verbosity: 1})
	gw := &stubGateway{}
	s := &Server{Registry: &reg, Handler: gw, Timeout: 2 * time.Second, MaxResponseBytes: 1024, Log: log}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go s.Serve(l, "kiosk")
	return &doorFixture{addr: l.Addr().String(), gw: gw, tok: EncodeToken(tok), log: logs, answers: &syncBuffer{}}
}

// send writes raw in one write, then reads the whole answer.
func (f *doorFixture) send(t *testing.T, raw []byte) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(raw); err != nil {
		t.Fatal(err)
	}
	all, _ := io.ReadAll(c)
	f.answers.add(string(all))
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(all)), nil)
	if err != nil {
		t.Fatalf("reading the answer %q: %v", all, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp
}

func TestServeOneRequest(t *testing.T) {
	f := startDoors(t)
	resp := f.send(t, head("GET", door, f.tok))
	if resp.StatusCode != 200 || !resp.Close || resp.ContentLength != 2 {
		t.Fatalf("positive control: %d %v", resp.StatusCode, resp.Header)
	}
	resp = f.send(t, append(head("PUT", door, f.tok, "Content-Length: 5"), "hello"...))
	if resp.StatusCode != 200 {
		t.Fatalf("PUT with a body: %d", resp.StatusCode)
	}
	got := f.gw.got()
	want := []seen{
		{"GET", door, door, "kiosk", "", ""},
		{"PUT", door, door, "kiosk", "hello", ""},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("the gateway saw %+v, want %+v (and never the token)", got, want)
	}
}

// DOOR-01 through the server: each refusal answers 401/403 and the
// gateway sees nothing.
func TestServeRefusesTokens(t *testing.T) {
	f := startDoors(t)
	wrong, _ := NewToken()
	for _, c := range []struct {
		raw    []byte
		status int
		reason Reason
	}{
		{head("GET", door, ""), 401, ReasonNoToken},
		{head("GET", door, EncodeToken(wrong)), 403, ReasonBadToken},
		{head("GET", "/api/settings", f.tok), 403, ReasonNotInSet},
		{head("GET", "/kiosk/%2e%2e/api/settings", f.tok), 400, ReasonBadTarget},
	} {
		resp := f.send(t, c.raw)
		if resp.StatusCode != c.status || resp.Header.Get("Crow-Door-Refused") != string(c.reason) {
			t.Errorf("%q: %d %s, want %d %s", c.raw, resp.StatusCode, resp.Header.Get("Crow-Door-Refused"), c.status, c.reason)
		}
	}
	if n := len(f.gw.got()); n != 0 {
		t.Fatalf("the gateway saw %d refused requests", n)
	}
	// Positive control on the same server.
	if resp := f.send(t, head("GET", door, f.tok)); resp.StatusCode != 200 {
		t.Fatalf("positive control: %d", resp.StatusCode)
	}
}

// DOOR-04: whatever is sent, the gateway sees one request per connection
// at most, and never a second request smuggled behind the first.
func TestServeOneRequestPerConnection(t *testing.T) {
	f := startDoors(t)
	second := head("PUT", door, f.tok, "Content-Length: 4")
	second = append(second, "evil"...)
	cases := []struct {
		name string
		raw  []byte
		want Reason
	}{
		{"pipelined in one write", append(head("GET", door, f.tok), second...), ReasonPipelined},
		{"a body longer than announced", append(append(head("PUT", door, f.tok, "Content-Length: 2"), "ok"...), second...), ReasonPipelined},
		{"CL.TE", append(head("POST", door, f.tok, "Content-Length: 5", "Transfer-Encoding: chunked"), []byte("0\r\n\r\n")...), ReasonForbiddenHeader},
		{"TE only", append(head("PUT", door, f.tok, "Transfer-Encoding: chunked"), []byte("4\r\nevil\r\n0\r\n\r\n")...), ReasonForbiddenHeader},
		{"Upgrade h2c", head("GET", door, f.tok, "Upgrade: h2c", "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA"), ReasonForbiddenHeader},
		{"Upgrade websocket", head("GET", door, f.tok, "Upgrade: websocket", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="), ReasonForbiddenHeader},
		{"keep-alive", head("GET", door, f.tok, "Connection: keep-alive"), ReasonNotClose},
	}
	for _, tc := range cases {
		resp := f.send(t, tc.raw)
		if got := resp.Header.Get("Crow-Door-Refused"); got != string(tc.want) {
			t.Errorf("%s: answered %d %q, want refusal %s", tc.name, resp.StatusCode, got, tc.want)
		}
	}
	for _, s := range f.gw.got() {
		t.Errorf("the gateway saw %+v", s)
	}

	// A second request in a later write finds the connection closed.
	c, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(head("GET", door, f.tok)); err != nil {
		t.Fatal(err)
	}
	first, _ := io.ReadAll(c)
	if !bytes.HasPrefix(first, []byte("HTTP/1.1 200 ")) {
		t.Fatalf("positive control: %q", first)
	}
	_, _ = c.Write(second) // the server has closed; the bytes go nowhere
	time.Sleep(100 * time.Millisecond)
	if got := f.gw.got(); len(got) != 1 || got[0].Method != "GET" {
		t.Fatalf("the gateway saw %+v, want the one GET", got)
	}
}

func TestServeIncomplete(t *testing.T) {
	f := startDoors(t)
	for _, raw := range [][]byte{
		[]byte("GET " + door + " HTTP/1.1\r\nHost: x\r\n"),
		append(head("PUT", door, f.tok, "Content-Length: 10"), "short"...),
	} {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write(raw)
		_ = c.(*net.TCPConn).CloseWrite()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		all, _ := io.ReadAll(c)
		c.Close()
		if !bytes.Contains(all, []byte("Crow-Door-Refused: "+string(ReasonIncomplete))) {
			t.Errorf("%q: answered %q, want Incomplete", raw, all)
		}
	}
	if n := len(f.gw.got()); n != 0 {
		t.Fatalf("the gateway saw %d incomplete requests", n)
	}
}

// The answer is framed by the door server, whatever the handler says.
func TestServeFramesTheAnswer(t *testing.T) {
	f := startDoors(t)
	f.gw.answer = func(w http.ResponseWriter) {
		w.Header().Set("Connection", "keep-alive")
		w.Header().Set("Transfer-Encoding", "chunked")
		w.Header().Set("X-Ok", "yes")
		w.WriteHeader(201)
		_, _ = io.WriteString(w, "made")
	}
	resp := f.send(t, head("GET", door, f.tok))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 || string(body) != "made" || !resp.Close ||
		len(resp.TransferEncoding) != 0 || resp.Header.Get("X-Ok") != "yes" {
		t.Fatalf("answer %d %v %q", resp.StatusCode, resp.Header, body)
	}

	f.gw.answer = func(w http.ResponseWriter) { _, _ = w.Write(make([]byte, 4096)) }
	if resp := f.send(t, head("GET", door, f.tok)); resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("an answer over the bound: %d, want 502", resp.StatusCode)
	}
	f.gw.answer = func(w http.ResponseWriter) { w.WriteHeader(101) }
	if resp := f.send(t, head("GET", door, f.tok)); resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("a 101 answer: %d, want 502", resp.StatusCode)
	}
	f.gw.answer = func(http.ResponseWriter) { panic("boom") }
	if resp := f.send(t, head("GET", door, f.tok)); resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("a panicking handler: %d, want 500", resp.StatusCode)
	}
}

// DOOR-09: no error path logs or answers the token, even when the wall
// puts it in the target or in another field.
func TestTokenNeverLoggedOrAnswered(t *testing.T) {
	f := startDoors(t)
	raws := [][]byte{
		head("GET", door, f.tok), // positive control: served
		head("GET", "/kiosk/"+f.tok, f.tok),
		head("GET", door+"?t="+f.tok, f.tok),
		head("GET", door, f.tok, "X-Copy: "+f.tok),
		head("GET", door, f.tok, "Connection: keep-alive-"+f.tok),
		head("GET", door, f.tok, "Host: "+f.tok+"/x"),
		head("PUT", door, f.tok, "Content-Length: 1"+f.tok),
		head("GET", door, strings.ToUpper(f.tok)),
		head("GET", door, f.tok[:60]),
		head("TRACE", door, f.tok),
		[]byte("GET " + door + " HTTP/1.1\r\n" + TokenHeader + ": " + f.tok + "\r\n\r\n"),
		append(head("GET", door, f.tok), head("GET", door, f.tok)...),
	}
	for _, raw := range raws {
		f.send(t, raw)
	}
	logs := f.log.String()
	if !strings.Contains(logs, "door request served") || !strings.Contains(logs, "door request refused") {
		t.Fatalf("positive control: the log holds no lines for served and refused requests:\n%s", logs)
	}
	upper := strings.ToUpper(f.tok)
	for what, text := range map[string]string{"log": logs, "answers": f.answers.String()} {
		if strings.Contains(text, f.tok) || strings.Contains(text, f.tok[:60]) || strings.Contains(text, upper) {
			t.Errorf("the %s hold the token:\n%s", what, text)
		}
	}
}
