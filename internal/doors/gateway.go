package doors

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"
)

// gatewayTimeout bounds one door request's round trip to the gateway.
const gatewayTimeout = 30 * time.Second

// Gateway is the Handler that carries an accepted door request to the
// gateway listening at addr (a loopback "host:port"): the same method, the
// request target byte for byte (Check has already judged it on its raw
// bytes), the same body, and the end-to-end header fields. Each request
// gets a connection of its own, closed after the answer, so nothing a wall
// sends can ride on another request's connection.
func Gateway(addr string) http.Handler {
	tr := &http.Transport{
		Proxy:                  nil, // never a proxy from the controller's environment
		DisableKeepAlives:      true,
		DisableCompression:     true,
		ResponseHeaderTimeout:  gatewayTimeout,
		MaxResponseHeaderBytes: 64 << 10,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		},
	}
	return &gateway{addr: addr, rt: tr}
}

type gateway struct {
	addr string
	rt   http.RoundTripper
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), gatewayTimeout)
	defer cancel()
	// r.RequestURI is the raw target Check accepted: one leading slash,
	// only [A-Za-z0-9-._~/], so it is the same path in every reading.
	out, err := http.NewRequestWithContext(ctx, r.Method, "http://"+g.addr+r.RequestURI, r.Body)
	if err != nil || out.URL.Path != r.RequestURI || out.URL.RawQuery != "" {
		http.Error(w, "door request could not be passed on", http.StatusBadGateway)
		return
	}
	out.ContentLength = r.ContentLength
	out.Host = r.Host
	for k, vs := range r.Header {
		if isHopByHop(k) {
			continue
		}
		out.Header[k] = append([]string(nil), vs...)
	}
	out.Close = true
	resp, err := g.rt.RoundTrip(out)
	if err != nil {
		// The gateway's address is ours, not the wall's: say only that it
		// did not answer.
		http.Error(w, "the gateway did not answer the door request", http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if isHopByHop(k) {
			continue
		}
		w.Header()[k] = append([]string(nil), vs...)
	}
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil {
		panic(http.ErrAbortHandler)
	}
}

func isHopByHop(k string) bool {
	for _, h := range hopByHop {
		if http.CanonicalHeaderKey(h) == http.CanonicalHeaderKey(k) {
			return true
		}
	}
	return false
}
