package doors

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

// TestGatewayCarriesExactlyTheCheckedRequest puts Gateway behind a Server
// with a real HTTP server as the gateway: an accepted door request reaches
// it once, with its target byte for byte and without the token; a refused
// one, and anything pipelined or upgraded behind an accepted one, never
// does (DOOR-01, DOOR-04).
func TestGatewayCarriesExactlyTheCheckedRequest(t *testing.T) {
	type got struct{ method, uri, token, upgrade, body, host string }
	var mu sync.Mutex
	var reqs []got
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		reqs = append(reqs, got{r.Method, r.RequestURI, r.Header.Get(TokenHeader), r.Header.Get("Upgrade"), string(b), r.Host})
		mu.Unlock()
		w.Header().Set("Connection", "keep-alive")
		w.Header().Set("X-Kiosk", "shown")
		_, _ = io.WriteString(w, "state:on")
	}))
	t.Cleanup(gw.Close)
	seenNow := func() []got { mu.Lock(); defer mu.Unlock(); return append([]got(nil), reqs...) }

	var reg Registry
	kiosk, _ := Core("kiosk")
	tok, revoke, err := reg.Grant("kiosk", kiosk)
	if err != nil {
		t.Fatal(err)
	}
	defer revoke()
	s := &Server{Registry: &reg, Handler: Gateway(gw.Listener.Addr().String()), Timeout: 5 * time.Second, Log: logr.Discard()}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go s.Serve(l, "kiosk")
	f := &doorFixture{addr: l.Addr().String(), tok: EncodeToken(tok), answers: &syncBuffer{}}

	// Positive control: the request reaches the gateway and its answer
	// comes back, framed by the door (Connection: close).
	resp := f.send(t, append(head("PUT", door, f.tok, "Content-Length: 2"), "on"...))
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "state:on" || resp.Header.Get("X-Kiosk") != "shown" || !resp.Close {
		t.Fatalf("door PUT = %d %q %v, want the gateway's answer", resp.StatusCode, body, resp.Header)
	}
	want := got{"PUT", door, "", "", "on", "127.0.0.1:3001"}
	if s := seenNow(); len(s) != 1 || s[0] != want {
		t.Fatalf("the gateway saw %+v, want exactly %+v", s, want)
	}

	// Refused before the gateway: no token, another path, a target that
	// could be read two ways.
	for _, raw := range [][]byte{
		head("GET", door, ""),
		head("GET", "/admin", f.tok),
		head("GET", door+"/../admin", f.tok),
		head("GET", "/kiosk/display%2Dstate", f.tok),
	} {
		if resp := f.send(t, raw); resp.StatusCode < 400 {
			t.Errorf("%q: %d, want a refusal", strings.SplitN(string(raw), "\r\n", 2)[0], resp.StatusCode)
		}
	}
	// A second request pipelined behind a good one, and an upgrade.
	two := append(head("GET", door, f.tok), head("GET", door, f.tok)...)
	if resp := f.send(t, two); resp.StatusCode < 400 {
		t.Errorf("pipelined pair: %d, want a refusal", resp.StatusCode)
	}
	if resp := f.send(t, head("GET", door, f.tok, "Upgrade: websocket")); resp.StatusCode < 400 {
		t.Errorf("upgrade: %d, want a refusal", resp.StatusCode)
	}
	if s := seenNow(); len(s) != 1 {
		t.Fatalf("the gateway saw %d requests, want only the accepted one: %+v", len(s), s)
	}

	// A gateway that is gone is a 502, not a hang.
	gw.Close()
	if resp := f.send(t, head("GET", door, f.tok)); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("gateway gone: %d, want 502", resp.StatusCode)
	}
	if strings.Contains(f.answers.String(), f.tok) {
		t.Error("an answer carried the token")
	}
}
