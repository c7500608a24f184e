package doors

import (
	"strings"
	"testing"
)

const door = "/kiosk/display-state"

// head builds a request head with the usual fields; fields replace or add
// to them ("Name:" with no value drops a field).
func head(method, target, token string, fields ...string) []byte {
	base := []string{"Host: 127.0.0.1:3001", "Connection: close"}
	if token != "" {
		base = append(base, TokenHeader+": "+token)
	}
	// A field named in fields replaces the usual one of that name; every
	// field given is kept, so a test can repeat one.
	var out []string
	for _, b := range base {
		n, _, _ := strings.Cut(b, ":")
		replaced := false
		for _, f := range fields {
			if fn, _, _ := strings.Cut(f, ":"); strings.EqualFold(fn, n) {
				replaced = true
			}
		}
		if !replaced {
			out = append(out, b)
		}
	}
	for _, f := range fields {
		if !strings.HasSuffix(f, ":") {
			out = append(out, f)
		}
	}
	base = out
	return []byte(method + " " + target + " HTTP/1.1\r\n" + strings.Join(base, "\r\n") + "\r\n\r\n")
}

// DOOR-01 and DOOR-03: every raw-bytes rule, the token and the set, each
// refusal beside the same request made right.
func TestCheck(t *testing.T) {
	var r Registry
	kiosk, _ := Core("kiosk")
	browser, _ := Core("browser")
	kt, _, _ := r.Grant("kiosk", kiosk)
	bt, _, _ := r.Grant("browser", browser)
	tok := EncodeToken(kt)
	// A previous spawn's token: granted, then revoked at spawn end.
	prevTok, revokePrev, _ := r.Grant("kiosk", kiosk)
	revokePrev()

	cases := []struct {
		name string
		raw  []byte
		want Reason
	}{
		{"positive control: GET", head("GET", door, tok), ""},
		{"positive control: PUT with a body length", head("PUT", door, tok, "Content-Length: 12"), ""},
		{"positive control: header names in any case", head("GET", door, "", "connection: Close", strings.ToLower(TokenHeader)+": "+tok), ""},

		// DOOR-01: tokens.
		{"no token", head("GET", door, ""), ReasonNoToken},
		{"empty token", head("GET", door, "", TokenHeader+":"+" "), ReasonNoToken},
		{"wrong token", head("GET", door, strings.Repeat("ab", 32)), ReasonBadToken},
		{"a previous spawn's token", head("GET", door, EncodeToken(prevTok)), ReasonBadToken},
		{"another add-on's token", head("GET", door, EncodeToken(bt)), ReasonBadToken},
		{"another add-on's token on its own door", head("POST", "/browser/restart", EncodeToken(bt)), ReasonBadToken},
		{"token twice", head("GET", door, "", TokenHeader+": "+tok, "X-A: 1", TokenHeader+": "+tok), ReasonBadHeader},
		{"path outside the set", head("GET", "/api/admin", tok), ReasonNotInSet},
		{"another add-on's door with own token", head("POST", "/browser/restart", tok), ReasonNotInSet},

		// DOOR-03: the target on its raw bytes.
		{"double slash", head("GET", "/"+door, tok), ReasonBadTarget},
		{"dot dot", head("GET", "/kiosk/../admin", tok), ReasonBadTarget},
		{"encoded dot dot", head("GET", "/kiosk/%2e%2e/admin", tok), ReasonBadTarget},
		{"encoded letter", head("GET", "/%6Biosk/display-state", tok), ReasonBadTarget},
		{"encoded slash", head("GET", "/kiosk%2Fdisplay-state", tok), ReasonBadTarget},
		{"query", head("GET", door+"?x=1", tok), ReasonBadTarget},
		{"empty query", head("GET", door+"?", tok), ReasonBadTarget},
		{"fragment", head("GET", door+"#f", tok), ReasonBadTarget},
		{"trailing slash", head("GET", door+"/", tok), ReasonBadTarget},
		{"dot segment at the end", head("GET", door+"/.", tok), ReasonBadTarget},
		{"dot segment inside", head("GET", "/kiosk/./display-state", tok), ReasonBadTarget},
		{"upper case: not the door", head("GET", "/KIOSK/DISPLAY-STATE", tok), ReasonNotInSet},
		{"backslash", head("GET", `\kiosk\display-state`, tok), ReasonBadTarget},
		{"backslash inside", head("GET", `/kiosk\display-state`, tok), ReasonBadTarget},
		{"semicolon", head("GET", door+";x", tok), ReasonBadTarget},
		{"encoded NUL", head("GET", door+"%00", tok), ReasonBadTarget},
		{"raw NUL", head("GET", door+"\x00", tok), ReasonBadTarget},
		{"tab inside", head("GET", "/kiosk/\tdisplay-state", tok), ReasonBadTarget},
		{"space inside", head("GET", "/kiosk/ display-state", tok), ReasonMalformed},
		{"absolute form", head("GET", "http://127.0.0.1:3001"+door, tok), ReasonBadTarget},
		{"authority form", head("CONNECT", "127.0.0.1:3001", tok), ReasonBadTarget},
		{"asterisk", head("OPTIONS", "*", tok), ReasonBadTarget},
		{"non-ASCII", head("GET", "/kiosk/display-stat\xc3\xa9", tok), ReasonBadTarget},
		{"64 KB target", head("GET", "/"+strings.Repeat("a", 64<<10), tok), ReasonTooLarge},
		{"long target within the head limit", head("GET", "/"+strings.Repeat("a", MaxTargetBytes), tok), ReasonBadTarget},

		// DOOR-03: methods outside the set.
		{"HEAD for GET", head("HEAD", door, tok), ReasonNotInSet},
		{"OPTIONS", head("OPTIONS", door, tok), ReasonNotInSet},
		{"TRACE", head("TRACE", door, tok), ReasonNotInSet},
		{"POST on a GET/PUT door", head("POST", door, tok), ReasonNotInSet},
		{"lower-case method", head("get", door, tok), ReasonBadMethod},
		{"method with a digit", head("GET2", door, tok), ReasonBadMethod},

		// Framing and fields.
		{"HTTP/1.0", []byte("GET " + door + " HTTP/1.0\r\nHost: x\r\nConnection: close\r\n" + TokenHeader + ": " + tok + "\r\n\r\n"), ReasonBadVersion},
		{"two spaces", []byte("GET  " + door + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"), ReasonMalformed},
		{"bare LF line ends", []byte("GET " + door + " HTTP/1.1\nHost: x\nConnection: close\n\r\n\r\n"), ReasonMalformed},
		{"bare CR inside a field", head("GET", door, tok, "X-A: a\rb"), ReasonMalformed},
		{"no final empty line", []byte("GET " + door + " HTTP/1.1\r\nHost: x\r\n"), ReasonMalformed},
		{"folded field", []byte("GET " + door + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n " + TokenHeader + ": " + tok + "\r\n\r\n"), ReasonBadHeader},
		{"space before the colon", head("GET", door, tok, "Host : x"), ReasonBadHeader},
		{"no Host", head("GET", door, tok, "Host:"), ReasonBadHeader},
		{"two Hosts", head("GET", door, tok, "X-A: 1", "Host: a", "X-B: 1", "Host: b"), ReasonBadHeader},
		{"Host with a path", head("GET", door, tok, "Host: a/b"), ReasonBadHeader},
		{"no Connection", head("GET", door, tok, "Connection:"), ReasonNotClose},
		{"keep-alive", head("GET", door, tok, "Connection: keep-alive"), ReasonNotClose},
		{"close, upgrade", head("GET", door, tok, "Connection: close, upgrade"), ReasonNotClose},
		{"Transfer-Encoding (CL.TE)", head("POST", door, tok, "Content-Length: 4", "Transfer-Encoding: chunked"), ReasonForbiddenHeader},
		{"Upgrade h2c", head("GET", door, tok, "Upgrade: h2c", "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA"), ReasonForbiddenHeader},
		{"Upgrade websocket", head("GET", door, tok, "Upgrade: websocket"), ReasonForbiddenHeader},
		{"Expect", head("PUT", door, tok, "Content-Length: 1", "Expect: 100-continue"), ReasonForbiddenHeader},
		{"two Content-Lengths", head("PUT", door, tok, "Content-Length: 1", "X-A: 1", "Content-Length: 1"), ReasonBadHeader},
		{"signed Content-Length", head("PUT", door, tok, "Content-Length: +1"), ReasonBadLength},
		{"leading-zero Content-Length", head("PUT", door, tok, "Content-Length: 01"), ReasonBadLength},
		{"huge Content-Length", head("PUT", door, tok, "Content-Length: 99999999999999999999"), ReasonBadLength},
		{"control byte in a value", head("GET", door, tok, "X-A: a\x01b"), ReasonBadHeader},
		{"non-ASCII value", head("GET", door, tok, "X-A: \xc3\xa9"), ReasonBadHeader},
		{"too many fields", head("GET", door, tok, manyFields(40)...), ReasonBadHeader},
	}
	for _, tc := range cases {
		req, got := r.Check(tc.raw, "kiosk")
		if got != tc.want {
			t.Errorf("%s: Check = %q, want %q", tc.name, got, tc.want)
			continue
		}
		if got == "" && (req.Target != door || req.Token != tok) {
			t.Errorf("%s: accepted as %q with another token", tc.name, req.Target)
		}
	}

	// The same request on another add-on's door port is refused.
	if _, got := r.Check(head("GET", door, tok), "browser"); got != ReasonBadToken {
		t.Errorf("kiosk's request on browser's door = %q, want BadToken", got)
	}
}

func manyFields(n int) []string {
	var out []string
	for i := range n {
		out = append(out, "X-F"+strings.Repeat("x", i)+": 1")
	}
	return out
}

func TestTargetOK(t *testing.T) {
	for _, ok := range []string{"/", "/a", door, "/a-b_c~d.e/f", "/a.b"} {
		if !TargetOK(ok) {
			t.Errorf("TargetOK(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "a", "//", "/a/", "/a//b", "/..", "/a/..", "/a/../b", "/.", "/./a", "/a/.", "/a..b", "/%41", "/a?", "/a#", "/a b", "/a\\b", "*", "http://x/a"} {
		if TargetOK(bad) {
			t.Errorf("TargetOK(%q) = true", bad)
		}
	}
}
