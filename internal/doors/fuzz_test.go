package doors

import (
	"bufio"
	"bytes"
	"net/http"
	"net/url"
	"path"
	"testing"
)

// FuzzDoorRequest: the raw-bytes rules never panic, and a head they
// accept is read the same way by net/http (a gateway written in anything
// else is held to the same bytes): the request line re-serializes to the
// input, and the target is the path, undecoded, uncleaned, with no query.
func FuzzDoorRequest(f *testing.F) {
	var reg Registry
	kiosk, _ := Core("kiosk")
	tokBytes, _, _ := reg.Grant("kiosk", kiosk)
	tok := EncodeToken(tokBytes)
	for _, s := range [][]byte{
		head("GET", door, tok),
		head("PUT", door, tok, "Content-Length: 5"),
		head("GET", "/kiosk/%2e%2e/admin", tok),
		head("GET", "//kiosk", tok),
		head("GET", door+"?x=1", tok),
		head("GET", "http://127.0.0.1:3001"+door, tok),
		head("POST", door, tok, "Content-Length: 4", "Transfer-Encoding: chunked"),
		[]byte("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
		[]byte("GET /a HTTP/1.1\nHost: x\n\n"),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = reg.Check(raw, "kiosk")
		req, reason := ParseRequest(raw)
		if reason != "" {
			return
		}
		line, _, _ := bytes.Cut(raw, []byte("\r\n"))
		if string(line) != req.Method+" "+req.Target+" HTTP/1.1" {
			t.Fatalf("accepted %q as %s %s", line, req.Method, req.Target)
		}
		if !TargetOK(req.Target) || path.Clean(req.Target) != req.Target {
			t.Fatalf("accepted target %q is not canonical", req.Target)
		}
		u, err := url.Parse("http://h" + req.Target)
		if err != nil || u.Path != req.Target || u.EscapedPath() != req.Target || u.RawQuery != "" || u.Fragment != "" {
			t.Fatalf("accepted target %q reads as %+v (%v)", req.Target, u, err)
		}
		hr, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			t.Fatalf("net/http refuses an accepted head %q: %v", raw, err)
		}
		if hr.Method != req.Method || hr.RequestURI != req.Target || hr.URL.Path != req.Target ||
			hr.URL.RawPath != "" || hr.URL.RawQuery != "" || hr.Host != req.Host ||
			hr.ContentLength != req.ContentLength || len(hr.TransferEncoding) != 0 || !hr.Close {
			t.Fatalf("net/http reads %q as %s %q (path %q, query %q, host %q, length %d, close %v); we read %+v",
				raw, hr.Method, hr.RequestURI, hr.URL.Path, hr.URL.RawQuery, hr.Host, hr.ContentLength, hr.Close, req)
		}
	})
}
