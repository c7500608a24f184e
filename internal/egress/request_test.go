package egress

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// acceptedHeads are request heads ParseRequest must accept, and what it
// must read from them; they also seed FuzzParseRequest.
var acceptedHeads = []struct {
	head string
	want Request
}{
	{"CONNECT example.com:443 HTTP/1.1\r\n\r\n",
		Request{Kind: KindConnect, Method: "CONNECT", Host: "example.com", Port: 443}},
	{"CONNECT Example.COM.:443 HTTP/1.1\r\nHost: example.com:443\r\nUser-Agent: curl/8.5.0\r\nProxy-Connection: Keep-Alive\r\n\r\n",
		Request{Kind: KindConnect, Method: "CONNECT", Host: "example.com", Port: 443,
			Header: []Header{{"User-Agent", "curl/8.5.0"}, {"Proxy-Connection", "Keep-Alive"}}}},
	{"CONNECT example.com:443 HTTP/1.1\r\nhost: EXAMPLE.com\r\n\r\n", // no port in Host: the CONNECT default, 443
		Request{Kind: KindConnect, Method: "CONNECT", Host: "example.com", Port: 443}},
	{"CONNECT 8.8.8.8:443 HTTP/1.1\r\n\r\n",
		Request{Kind: KindConnect, Method: "CONNECT", Host: "8.8.8.8", Port: 443}},
	{"CONNECT [2606:4700:0::1111]:443 HTTP/1.1\r\nHost: [2606:4700::1111]:443\r\n\r\n",
		Request{Kind: KindConnect, Method: "CONNECT", Host: "2606:4700::1111", Port: 443}},
	{"CONNECT db.lan:5432 HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
		Request{Kind: KindConnect, Method: "CONNECT", Host: "db.lan", Port: 5432,
			Header: []Header{{"Content-Length", "0"}}}},
	{"CONNECT a.b:65535 HTTP/1.1\r\nX-Empty:\r\nX-Tabs: \t a\tb \t\r\n\r\n",
		Request{Kind: KindConnect, Method: "CONNECT", Host: "a.b", Port: 65535,
			Header: []Header{{"X-Empty", ""}, {"X-Tabs", "a\tb"}}}},
	{"GET http://nas.lan:8080/x?y=1&z=%2F HTTP/1.1\r\nHost: nas.lan:8080\r\nAccept: */*\r\n\r\n",
		Request{Kind: KindPlainHTTP, Method: "GET", Host: "nas.lan", Port: 8080, Path: "/x?y=1&z=%2F",
			Header: []Header{{"Accept", "*/*"}}}},
	{"GET http://nas.lan HTTP/1.1\r\nHost: nas.lan\r\n\r\n",
		Request{Kind: KindPlainHTTP, Method: "GET", Host: "nas.lan", Port: 80, Path: "/"}},
	{"GET http://nas.lan?q HTTP/1.1\r\n\r\n",
		Request{Kind: KindPlainHTTP, Method: "GET", Host: "nas.lan", Port: 80, Path: "/?q"}},
	{"POST http://192.168.1.10:8123/api/x HTTP/1.1\r\nContent-Length: 12\r\n\r\n",
		Request{Kind: KindPlainHTTP, Method: "POST", Host: "192.168.1.10", Port: 8123, Path: "/api/x",
			Header: []Header{{"Content-Length", "12"}}, ContentLength: 12}},
}

func TestParseRequestAccepts(t *testing.T) {
	for _, tc := range acceptedHeads {
		got, err := ParseRequest([]byte(tc.head))
		if err != nil {
			t.Errorf("%q: %v", tc.head, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.head, got, tc.want)
		}
		again, err := ParseRequest(got.Canonical())
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("%q: canonical form %q parses to %+v, %v", tc.head, got.Canonical(), again, err)
		}
	}
}

// refusedHeads are request heads ParseRequest must refuse; they also seed
// FuzzParseRequest.
var refusedHeads = []string{
	// Line endings and bytes.
	"CONNECT example.com:443 HTTP/1.1\n\n",
	"CONNECT example.com:443 HTTP/1.1\r\n\n",
	"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nX: a\rb\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nX: a\x00b\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nX: caf\xc3\xa9\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nX: a\x7fb\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\n\r\n\r\n",
	"\r\nCONNECT example.com:443 HTTP/1.1\r\n\r\n",
	// Request line.
	"connect example.com:443 HTTP/1.1\r\n\r\n",
	"Connect example.com:443 HTTP/1.1\r\n\r\n",
	"get http://nas.lan/ HTTP/1.1\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.0\r\n\r\n",
	"CONNECT example.com:443 HTTP/2\r\n\r\n",
	"CONNECT example.com:443 HTTP/2.0\r\n\r\n",
	"PRI * HTTP/2.0\r\n\r\n",
	"CONNECT example.com:443 http/1.1\r\n\r\n",
	"CONNECT  example.com:443 HTTP/1.1\r\n\r\n",
	"CONNECT example.com:443  HTTP/1.1\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1 \r\n\r\n",
	"CONNECT\texample.com:443 HTTP/1.1\r\n\r\n",
	"CONNECT example.com:443\r\n\r\n",
	"TRACE http://nas.lan/ HTTP/1.1\r\n\r\n",
	"GET /x HTTP/1.1\r\nHost: nas.lan\r\n\r\n", // origin form
	"GET https://nas.lan/ HTTP/1.1\r\n\r\n",
	"GET HTTP://nas.lan/ HTTP/1.1\r\n\r\n",
	"GET http://nas.lan/#frag HTTP/1.1\r\n\r\n",
	"GET http://nas.lan/a%2 HTTP/1.1\r\n\r\n",
	"GET http://nas.lan/a%zz HTTP/1.1\r\n\r\n",
	"GET http://nas.lan/a\"b HTTP/1.1\r\n\r\n",
	"GET http://nas.lan:/ HTTP/1.1\r\n\r\n",
	"GET http:///x HTTP/1.1\r\n\r\n",
	"CONNECT example.com HTTP/1.1\r\n\r\n",
	"CONNECT http://example.com:443 HTTP/1.1\r\n\r\n",
	"CONNECT example.com:443/ HTTP/1.1\r\n\r\n",
	// Userinfo.
	"CONNECT user@example.com:443 HTTP/1.1\r\n\r\n",
	"CONNECT user:pw@example.com:443 HTTP/1.1\r\n\r\n",
	"GET http://user@nas.lan/ HTTP/1.1\r\n\r\n",
	"GET http://nas.lan@evil.com/ HTTP/1.1\r\n\r\n",
	// Ports (SECURITY-CASES NET-03).
	"CONNECT example.com:0 HTTP/1.1\r\n\r\n",
	"CONNECT example.com:65536 HTTP/1.1\r\n\r\n",
	"CONNECT example.com:+443 HTTP/1.1\r\n\r\n",
	"CONNECT example.com:0443 HTTP/1.1\r\n\r\n",
	"CONNECT example.com:4.4.3 HTTP/1.1\r\n\r\n",
	"CONNECT example.com:https HTTP/1.1\r\n\r\n",
	"CONNECT example.com:443abc HTTP/1.1\r\n\r\n",
	"CONNECT example.com:-443 HTTP/1.1\r\n\r\n",
	"CONNECT example.com:443:443 HTTP/1.1\r\n\r\n",
	"CONNECT example.com: HTTP/1.1\r\n\r\n",
	// Hosts (NET-04).
	"CONNECT :443 HTTP/1.1\r\n\r\n",
	"CONNECT []:443 HTTP/1.1\r\n\r\n",
	"CONNECT 127.1:443 HTTP/1.1\r\n\r\n",
	"CONNECT 2130706433:443 HTTP/1.1\r\n\r\n",
	"CONNECT 0x7f000001:443 HTTP/1.1\r\n\r\n",
	"CONNECT 0177.0.0.1:443 HTTP/1.1\r\n\r\n",
	"CONNECT 0:443 HTTP/1.1\r\n\r\n",
	"CONNECT ::1:443 HTTP/1.1\r\n\r\n",
	"CONNECT [::1:443 HTTP/1.1\r\n\r\n",
	"CONNECT [::1]443 HTTP/1.1\r\n\r\n",
	"CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n",
	"CONNECT [127.0.0.1]:443 HTTP/1.1\r\n\r\n",
	"CONNECT exa%6dple.com:443 HTTP/1.1\r\n\r\n",
	"CONNECT ex_ample.com:443 HTTP/1.1\r\n\r\n",
	// Header fields.
	"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n  folded\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nX-A: 1\r\n\tfolded\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nHost : example.com:443\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nX A: 1\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\n: empty name\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nno colon\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nHost: example.com:443\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nHost: other.com:443\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:444\r\n\r\n",
	"CONNECT example.com:8443 HTTP/1.1\r\nHost: example.com\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nHost: user@example.com:443\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nHost:\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
	"GET http://nas.lan:8080/ HTTP/1.1\r\nHost: gateway:3001\r\n\r\n",
	"GET http://nas.lan:8080/ HTTP/1.1\r\nHost: nas.lan\r\n\r\n",
	"POST http://nas.lan/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
	"POST http://nas.lan/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
	"POST http://nas.lan/ HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\n",
	"POST http://nas.lan/ HTTP/1.1\r\nContent-Length: +3\r\n\r\n",
	"POST http://nas.lan/ HTTP/1.1\r\nContent-Length: 03\r\n\r\n",
	"POST http://nas.lan/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
	"POST http://nas.lan/ HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
	"POST http://nas.lan/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
	"POST http://nas.lan/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
	"POST http://nas.lan/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n",
	// Size.
	"CONNECT example.com:443 HTTP/1.1\r\nX: " + strings.Repeat("a", MaxHeadBytes) + "\r\n\r\n",
	"CONNECT example.com:443 HTTP/1.1\r\n" + strings.Repeat("X: 1\r\n", maxHeaders+1) + "\r\n",
}

func TestParseRequestRefuses(t *testing.T) {
	ok := "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"
	if _, err := ParseRequest([]byte(ok)); err != nil {
		t.Fatalf("control %q: %v", ok, err)
	}
	for _, head := range refusedHeads {
		req, err := ParseRequest([]byte(head))
		if err == nil {
			t.Errorf("%q was accepted as %+v", head, req)
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v is not a *ParseError", head, err)
		}
	}
}

// A head just under the bound is read; the control for the size refusal.
func TestParseRequestSizeBound(t *testing.T) {
	prefix := "CONNECT example.com:443 HTTP/1.1\r\nX: "
	pad := MaxHeadBytes - len(prefix) - len("\r\n\r\n")
	head := prefix + strings.Repeat("a", pad) + "\r\n\r\n"
	if len(head) != MaxHeadBytes {
		t.Fatalf("test head is %d bytes", len(head))
	}
	if _, err := ParseRequest([]byte(head)); err != nil {
		t.Errorf("a %d-byte head was refused: %v", len(head), err)
	}
	head = prefix + strings.Repeat("a", pad+1) + "\r\n\r\n"
	if _, err := ParseRequest([]byte(head)); err == nil {
		t.Errorf("a %d-byte head was accepted", len(head))
	}
}

func TestReadHead(t *testing.T) {
	for _, tc := range []struct {
		in, head, rest string
	}{
		{"CONNECT a.b:443 HTTP/1.1\r\n\r\nPAYLOAD", "CONNECT a.b:443 HTTP/1.1\r\n\r\n", "PAYLOAD"},
		{"CONNECT a.b:443 HTTP/1.1\r\nX: 1\r\n\r\n", "CONNECT a.b:443 HTTP/1.1\r\nX: 1\r\n\r\n", ""},
		// Bare LFs end the head too, so ParseRequest refuses them at once.
		{"CONNECT a.b:443 HTTP/1.1\n\nrest", "CONNECT a.b:443 HTTP/1.1\n\n", "rest"},
	} {
		// Read a byte at a time, nothing past the head is taken from
		// the reader; what is, comes back as rest.
		obr := &oneByteReader{r: strings.NewReader(tc.in)}
		head, rest, err := ReadHead(obr)
		left, _ := io.ReadAll(obr.r)
		if err != nil || string(head) != tc.head || string(rest)+string(left) != tc.rest {
			t.Errorf("ReadHead(%q) = %q, %q+%q, %v", tc.in, head, rest, left, err)
		}
		head, rest, err = ReadHead(strings.NewReader(tc.in))
		if err != nil || string(head) != tc.head || string(rest) != tc.rest {
			t.Errorf("ReadHead(%q) in one read = %q, %q, %v", tc.in, head, rest, err)
		}
	}
	if _, _, err := ReadHead(strings.NewReader("CONNECT a.b:443 HTTP/1.1\r\n")); err == nil {
		t.Error("a head cut off by EOF was read")
	}
	if _, _, err := ReadHead(strings.NewReader("X" + strings.Repeat("a", 2*MaxHeadBytes))); err == nil {
		t.Error("an endless head was read")
	}
}

type oneByteReader struct{ r *strings.Reader }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

// FuzzParseRequest: no input panics, and every accepted request
// re-serializes to a canonical form that parses to the same request (and
// that canonical form is a fixed point).
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
		"CONNECT [::1]:8080 HTTP/1.1\r\n\r\n",
		"CONNECT 8.8.8.8:443 HTTP/1.1\r\nProxy-Authorization: Basic eA==\r\n\r\n",
		"GET http://nas.lan:8080/x?y=%20 HTTP/1.1\r\nHost: nas.lan:8080\r\nAccept: */*\r\n\r\n",
		"POST http://nas.lan/ HTTP/1.1\r\nContent-Length: 3\r\n\r\n",
		"GET http://nas.lan HTTP/1.1\r\nHost: NAS.LAN.\r\n\r\n",
		"CONNECT 127.1:443 HTTP/1.1\r\n\r\n",
		"connect a:1 HTTP/1.1\n\n",
		"CONNECT a:1 HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	for _, tc := range acceptedHeads {
		f.Add([]byte(tc.head))
	}
	for _, h := range refusedHeads {
		f.Add([]byte(h))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		req, err := ParseRequest(head)
		if err != nil {
			return
		}
		if req.Port == 0 || req.Host == "" || (req.Kind == KindPlainHTTP) != (req.Path != "") {
			t.Fatalf("accepted an incomplete request %+v from %q", req, head)
		}
		canon := req.Canonical()
		again, err := ParseRequest(canon)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, head, err)
		}
		if !reflect.DeepEqual(again, req) {
			t.Fatalf("canonical form %q of %q parses to %+v, not %+v", canon, head, again, req)
		}
		if !bytes.Equal(again.Canonical(), canon) {
			t.Fatalf("canonical form is not a fixed point: %q then %q", canon, again.Canonical())
		}
	})
}
