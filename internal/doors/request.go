package doors

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
)

// Bounds on one door request.
const (
	// MaxHeadBytes bounds the request head, its final empty line included.
	MaxHeadBytes = 8 << 10
	// MaxTargetBytes bounds the request target.
	MaxTargetBytes = 256
	// MaxBodyBytes bounds the body a Content-Length may announce.
	MaxBodyBytes = 1 << 20
	// maxFields bounds the header fields.
	maxFields = 32
	// maxMethod bounds the method's length.
	maxMethod = 16
)

// Reason is the stable, CamelCase word a refused door request is answered
// and counted with.
type Reason string

// Refusal reasons.
const (
	// ReasonMalformed: the head is not CRLF-framed HTTP/1.1 as read
	// strictly (bare CR or LF, a folded line, a bad request line).
	ReasonMalformed Reason = "Malformed"
	// ReasonBadMethod: the method is not a short upper-case word.
	ReasonBadMethod Reason = "BadMethod"
	// ReasonBadTarget: the request target could be read two ways: not one
	// leading slash, or "//", "..", ".", "%", "?", "#", a trailing slash,
	// absolute form, "*", or a byte outside [A-Za-z0-9-._~/].
	ReasonBadTarget Reason = "BadTarget"
	// ReasonBadVersion: not HTTP/1.1.
	ReasonBadVersion Reason = "BadVersion"
	// ReasonBadHeader: a header field is malformed, repeated where it may
	// appear once, or Host is missing.
	ReasonBadHeader Reason = "BadHeader"
	// ReasonForbiddenHeader: a field that could make the connection carry
	// more than one request (Transfer-Encoding, Upgrade, Expect, …).
	ReasonForbiddenHeader Reason = "ForbiddenHeader"
	// ReasonNotClose: the request does not say "Connection: close".
	ReasonNotClose Reason = "ConnectionNotClose"
	// ReasonBadLength: Content-Length is not a plain decimal within
	// MaxBodyBytes.
	ReasonBadLength Reason = "BadContentLength"
	// ReasonTooLarge: the head is longer than MaxHeadBytes.
	ReasonTooLarge Reason = "TooLarge"
	// ReasonPipelined: more bytes follow the request than it announced.
	ReasonPipelined Reason = "Pipelined"
	// ReasonIncomplete: the connection ended or timed out mid-request.
	ReasonIncomplete Reason = "Incomplete"
	// ReasonNoToken: no door token.
	ReasonNoToken Reason = "NoToken"
	// ReasonBadToken: not the token of a live spawn of this add-on.
	ReasonBadToken Reason = "BadToken"
	// ReasonNotInSet: the method and path are not one of the add-on's
	// doors (every other gateway path).
	ReasonNotInSet Reason = "NotInSet"
)

// Status is the HTTP status a refusal is answered with.
func (r Reason) Status() int {
	switch r {
	case ReasonNoToken:
		return http.StatusUnauthorized
	case ReasonBadToken, ReasonNotInSet:
		return http.StatusForbidden
	case ReasonTooLarge:
		return http.StatusRequestHeaderFieldsTooLarge
	case ReasonBadLength:
		return http.StatusRequestEntityTooLarge
	case ReasonIncomplete:
		return http.StatusRequestTimeout
	}
	return http.StatusBadRequest
}

// Field is one header field as received: the name in its original case,
// the value without surrounding spaces or tabs.
type Field struct{ Name, Value string }

// Request is one door request head that passed every raw-bytes rule.
type Request struct {
	Method string
	// Target is the request target exactly as sent; it is also the path.
	Target string
	Host   string
	// ContentLength is the body's length (0 when absent).
	ContentLength int64
	// Token is the token header's value. Never log it.
	Token string
	// Fields are the other header fields, in order.
	Fields []Field
}

// forbidden are header fields a door request may not carry: each could
// frame a second request, switch protocols or keep the connection open.
var forbidden = map[string]bool{
	"transfer-encoding": true, "te": true, "trailer": true, "upgrade": true,
	"expect": true, "keep-alive": true, "proxy-connection": true,
	"http2-settings": true,
}

// ParseRequest applies the raw-bytes rules to one request head: the bytes
// up to and including the first CRLF CRLF, and nothing after it. It never
// decodes, cleans or folds anything, so an accepted target is byte for
// byte the path any HTTP server will see.
func ParseRequest(head []byte) (Request, Reason) {
	if len(head) > MaxHeadBytes {
		return Request{}, ReasonTooLarge
	}
	body, ok := bytes.CutSuffix(head, []byte("\r\n\r\n"))
	if !ok {
		return Request{}, ReasonMalformed
	}
	lines := strings.Split(string(body), "\r\n")
	for _, l := range lines {
		// A bare CR or LF would let two parsers split lines differently.
		if strings.ContainsAny(l, "\r\n") {
			return Request{}, ReasonMalformed
		}
	}
	var req Request
	if r := parseRequestLine(lines[0], &req); r != "" {
		return Request{}, r
	}
	if r := parseFields(lines[1:], &req); r != "" {
		return Request{}, r
	}
	return req, ""
}

func parseRequestLine(line string, req *Request) Reason {
	parts := strings.Split(line, " ")
	if len(parts) != 3 {
		return ReasonMalformed
	}
	method, target, version := parts[0], parts[1], parts[2]
	if len(method) == 0 || len(method) > maxMethod {
		return ReasonBadMethod
	}
	for i := 0; i < len(method); i++ {
		if c := method[i]; c < 'A' || c > 'Z' {
			return ReasonBadMethod
		}
	}
	if !TargetOK(target) {
		return ReasonBadTarget
	}
	if version != "HTTP/1.1" {
		return ReasonBadVersion
	}
	req.Method, req.Target = method, target
	return ""
}

// TargetOK reports whether a raw request target can be read only one way:
// exactly one leading slash, only the bytes [A-Za-z0-9-._~/], no "//", no
// "..", no "." segment and no trailing slash (except "/" itself), and at
// most MaxTargetBytes. So "%", "?", "#", ";", "\", spaces, absolute form,
// authority form and "*" are all refused.
func TargetOK(t string) bool {
	if len(t) == 0 || len(t) > MaxTargetBytes || t[0] != '/' {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
			return false
		}
	}
	if t == "/" {
		return true
	}
	return !strings.Contains(t, "//") && !strings.Contains(t, "..") &&
		!strings.Contains(t, "/./") && !strings.HasSuffix(t, "/.") && !strings.HasSuffix(t, "/")
}

func parseFields(lines []string, req *Request) Reason {
	if len(lines) > maxFields {
		return ReasonBadHeader
	}
	var hosts, conns, lengths, tokens int
	for _, l := range lines {
		name, value, ok := strings.Cut(l, ":")
		if !ok || !fieldName(name) {
			// Also a folded line (leading space or tab) and "Name :".
			return ReasonBadHeader
		}
		value = strings.Trim(value, " \t")
		if !fieldValue(value) {
			return ReasonBadHeader
		}
		switch lower := strings.ToLower(name); {
		case forbidden[lower]:
			return ReasonForbiddenHeader
		case lower == "host":
			hosts++
			if !hostValue(value) {
				return ReasonBadHeader
			}
			req.Host = value
		case lower == "connection":
			conns++
			if !strings.EqualFold(value, "close") {
				return ReasonNotClose
			}
		case lower == "content-length":
			lengths++
			n, ok := contentLength(value)
			if !ok {
				return ReasonBadLength
			}
			req.ContentLength = n
		case lower == strings.ToLower(TokenHeader):
			tokens++
			req.Token = value
			continue
		}
		req.Fields = append(req.Fields, Field{Name: name, Value: value})
	}
	switch {
	case hosts != 1, lengths > 1, tokens > 1:
		return ReasonBadHeader
	case conns != 1:
		return ReasonNotClose
	}
	return ""
}

// fieldName: an RFC 9110 token of at most 64 bytes.
func fieldName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// fieldValue: visible ASCII, with spaces and tabs inside only.
func fieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x21 || c > 0x7e) && c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// hostValue: a name or address and an optional port, nothing else.
func hostValue(s string) bool {
	if len(s) == 0 || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// contentLength: plain decimal digits, no sign, no leading zero (except
// "0" itself), at most MaxBodyBytes.
func contentLength(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 7 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > MaxBodyBytes {
		return 0, false
	}
	return n, true
}

// Check applies every rule to one request head arriving on addonID's
// door port: the raw-bytes rules, then the token (which must be a live
// spawn's of this very add-on), then the door set. The token is judged
// before the door, so a caller without one learns nothing about the set.
func (r *Registry) Check(head []byte, addonID string) (Request, Reason) {
	req, reason := ParseRequest(head)
	if reason != "" {
		return Request{}, reason
	}
	if req.Token == "" {
		return Request{}, ReasonNoToken
	}
	set, ok := r.authorize(addonID, req.Token)
	if !ok {
		return Request{}, ReasonBadToken
	}
	if !set.Has(req.Method, req.Target) {
		return Request{}, ReasonNotInSet
	}
	return req, ""
}
