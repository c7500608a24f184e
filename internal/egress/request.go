package egress

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// MaxHeadBytes bounds a request head, its final empty line included.
const MaxHeadBytes = 16 << 10

// maxHeaders bounds the number of header fields in one head.
const maxHeaders = 100

// Kind is the form a request took.
type Kind uint8

// The two forms the relay accepts.
const (
	// KindConnect is "CONNECT host:port HTTP/1.1": a tunnel.
	KindConnect Kind = iota + 1
	// KindPlainHTTP is an absolute-form request, "GET http://host:port/x
	// HTTP/1.1", for a listed plain-HTTP entry: one request, then close.
	KindPlainHTTP
)

func (k Kind) String() string {
	switch k {
	case KindConnect:
		return "CONNECT"
	case KindPlainHTTP:
		return "plain HTTP"
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// plainMethods are the methods a plain-HTTP request may use. CONNECT is
// the tunnel form; TRACE and anything unknown are refused.
var plainMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true,
	"PATCH": true, "DELETE": true, "OPTIONS": true,
}

// Header is one header field as received: the name in its original case,
// the value without surrounding spaces or tabs.
type Header struct {
	Name, Value string
}

// Request is one request head, parsed strictly. Every field is normalized,
// so two requests that mean the same target compare equal.
type Request struct {
	Kind Kind
	// Method is "CONNECT" or the plain-HTTP method.
	Method string
	// Host is a lower-case DNS name without a trailing dot, or an IP
	// address in its canonical text form (IPv6 without brackets).
	Host string
	// Port is the target port, 1–65535.
	Port uint16
	// Path is the origin-form target sent upstream for plain HTTP (a path
	// and an optional query, starting with "/"); empty for CONNECT.
	Path string
	// Header is every header field except Host, in the order received.
	Header []Header
	// ContentLength is the request body's length; 0 when there is none.
	ContentLength int64
}

// HostPort is the target as "host:port", with brackets around IPv6.
func (r Request) HostPort() string {
	return net.JoinHostPort(r.Host, strconv.Itoa(int(r.Port)))
}

// HostAddr returns the target as an address when the host is an IP literal.
func (r Request) HostAddr() (netip.Addr, bool) {
	a, err := netip.ParseAddr(r.Host)
	return a, err == nil
}

// Canonical is the request head re-serialized in one canonical form: the
// target with its port, a Host header naming the target, then the other
// headers. ParseRequest(r.Canonical()) returns r.
func (r Request) Canonical() []byte {
	var b bytes.Buffer
	hp := r.HostPort()
	if r.Kind == KindConnect {
		b.WriteString("CONNECT " + hp + " HTTP/1.1\r\n")
	} else {
		b.WriteString(r.Method + " http://" + hp + r.Path + " HTTP/1.1\r\n")
	}
	b.WriteString("Host: " + hp + "\r\n")
	for _, h := range r.Header {
		b.WriteString(h.Name + ": " + h.Value + "\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// ParseError is a request the relay could not read. Target is the raw
// request target when the request line got that far.
type ParseError struct {
	Target string
	Msg    string
}

func (e *ParseError) Error() string {
	if e.Target == "" {
		return "bad request: " + e.Msg
	}
	return fmt.Sprintf("bad request for %q: %s", e.Target, e.Msg)
}

// ParseRequest parses one request head from its raw bytes: the request
// line, the header fields and the empty line that ends them, and nothing
// after. It is deliberately stricter than net/http: anything a lenient
// parser elsewhere might read differently is refused.
func ParseRequest(head []byte) (Request, error) {
	fail := func(target, format string, args ...any) (Request, error) {
		return Request{}, &ParseError{Target: target, Msg: fmt.Sprintf(format, args...)}
	}
	if len(head) > MaxHeadBytes {
		return fail("", "the request head is over %d bytes", MaxHeadBytes)
	}
	if !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		return fail("", "the request head does not end with an empty CRLF line")
	}
	for i, c := range head {
		switch {
		case c == 0:
			return fail("", "NUL byte at offset %d", i)
		case c == '\r' && (i+1 >= len(head) || head[i+1] != '\n'):
			return fail("", "bare CR at offset %d (lines must end with CRLF)", i)
		case c == '\n' && (i == 0 || head[i-1] != '\r'):
			return fail("", "bare LF at offset %d (lines must end with CRLF)", i)
		}
	}
	lines := strings.Split(string(head[:len(head)-4]), "\r\n")
	method, target, version, ok := splitRequestLine(lines[0])
	if !ok {
		return fail("", "the request line is not METHOD SP TARGET SP VERSION")
	}
	if version != "HTTP/1.1" {
		return fail(target, "version %q is not HTTP/1.1", version)
	}

	var req Request
	defaultPort := uint16(443)
	switch {
	case method == "CONNECT":
		req.Kind, req.Method = KindConnect, method
		host, port, err := parseAuthority(target, false, 0)
		if err != nil {
			return fail(target, "CONNECT target: %v", err)
		}
		req.Host, req.Port = host, port
	case plainMethods[method]:
		req.Kind, req.Method = KindPlainHTTP, method
		defaultPort = 80
		host, port, path, err := parseAbsoluteHTTP(target)
		if err != nil {
			return fail(target, "%v", err)
		}
		req.Host, req.Port, req.Path = host, port, path
	case strings.ToUpper(method) == "CONNECT" || plainMethods[strings.ToUpper(method)]:
		return fail(target, "method %q must be upper-case", method)
	default:
		return fail(target, "method %q is not relayed", method)
	}

	if len(lines)-1 > maxHeaders {
		return fail(target, "more than %d header fields", maxHeaders)
	}
	var sawHost, sawLength bool
	for _, line := range lines[1:] {
		if line == "" {
			return fail(target, "data after the end of the head")
		}
		if line[0] == ' ' || line[0] == '\t' {
			return fail(target, "obsolete line folding")
		}
		colon := strings.IndexByte(line, ':')
		if colon < 0 {
			return fail(target, "header line without a colon")
		}
		name, value := line[:colon], strings.Trim(line[colon+1:], " \t")
		if !isToken(name) {
			return fail(target, "header name %q is not a token", name)
		}
		if i := strings.IndexFunc(value, func(r rune) bool { return !(r == ' ' || r == '\t' || (r > 0x20 && r < 0x7f)) }); i >= 0 {
			return fail(target, "header %s holds a byte that is not printable ASCII", name)
		}
		switch {
		case strings.EqualFold(name, "Host"):
			if sawHost {
				return fail(target, "more than one Host header")
			}
			sawHost = true
			if err := checkHostHeader(value, req.Host, req.Port, defaultPort); err != nil {
				return fail(target, "%v", err)
			}
			continue
		case strings.EqualFold(name, "Content-Length"):
			if sawLength {
				return fail(target, "more than one Content-Length header")
			}
			sawLength = true
			n, err := parseContentLength(value)
			if err != nil {
				return fail(target, "%v", err)
			}
			if req.Kind == KindConnect && n != 0 {
				return fail(target, "a CONNECT request carries no body")
			}
			req.ContentLength = n
		case strings.EqualFold(name, "Transfer-Encoding"):
			// A chunked request body would have to be decoded and
			// re-framed to keep one request per connection; no add-on
			// needs it, so it is refused rather than half-supported.
			return fail(target, "Transfer-Encoding is not relayed (send Content-Length)")
		}
		req.Header = append(req.Header, Header{Name: name, Value: value})
	}
	return req, nil
}

func splitRequestLine(line string) (method, target, version string, ok bool) {
	parts := strings.Split(line, " ")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", false
	}
	if !isToken(parts[0]) {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// parseAbsoluteHTTP reads "http://host[:port][/path][?query]".
func parseAbsoluteHTTP(target string) (host string, port uint16, path string, err error) {
	const scheme = "http://"
	if !strings.HasPrefix(target, scheme) {
		if strings.HasPrefix(strings.ToLower(target), "https://") {
			return "", 0, "", fmt.Errorf("https targets go through CONNECT")
		}
		return "", 0, "", fmt.Errorf("a plain-HTTP target must be absolute-form http://host:port/path")
	}
	rest := target[len(scheme):]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	host, port, err = parseAuthority(rest[:end], true, 80)
	if err != nil {
		return "", 0, "", err
	}
	path = rest[end:]
	if path == "" || path[0] == '?' {
		path = "/" + path
	}
	if err := checkPath(path); err != nil {
		return "", 0, "", err
	}
	return host, port, path, nil
}

func checkPath(path string) error {
	for i := 0; i < len(path); i++ {
		c := path[i]
		switch {
		case c == '%':
			if i+2 >= len(path) || !isHex(path[i+1]) || !isHex(path[i+2]) {
				return fmt.Errorf("the path holds a %% not followed by two hex digits")
			}
			i += 2
		case isAlnum(c) || strings.IndexByte("-._~!$&'()*+,;=:@/?", c) >= 0:
		default:
			return fmt.Errorf("the path holds the byte %q", c)
		}
	}
	return nil
}

// parseAuthority reads "host:port" (or "host" when the port is optional)
// with no userinfo. host is a DNS name or an IP literal, IPv6 in brackets.
func parseAuthority(s string, portOptional bool, defaultPort uint16) (host string, port uint16, err error) {
	if strings.ContainsRune(s, '@') {
		return "", 0, fmt.Errorf("userinfo (@) in the target is refused")
	}
	var hostPart, portPart string
	hasPort := false
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("unclosed [ in the host")
		}
		hostPart = s[:end+1]
		switch rest := s[end+1:]; {
		case rest == "":
		case rest[0] == ':':
			portPart, hasPort = rest[1:], true
		default:
			return "", 0, fmt.Errorf("text after ] that is not :port")
		}
	} else {
		if strings.Count(s, ":") > 1 {
			return "", 0, fmt.Errorf("an IPv6 host must be in brackets")
		}
		var found bool
		hostPart, portPart, found = strings.Cut(s, ":")
		hasPort = found
	}
	host, err = normalizeHost(hostPart)
	if err != nil {
		return "", 0, err
	}
	if !hasPort {
		if !portOptional {
			return "", 0, fmt.Errorf("no port")
		}
		return host, defaultPort, nil
	}
	port, err = parsePort(portPart)
	if err != nil {
		return "", 0, err
	}
	return host, port, nil
}

// normalizeHost returns a host's one canonical spelling: an IP literal in
// netip's text form, or a DNS name in lower case without a trailing dot.
// Everything else is refused, in particular every numeric-looking name a
// resolver's inet_aton would read as an address ("127.1", "0x7f.1",
// "0177.0.0.1", "2130706433"): the relay never hands such a name to a
// resolver, and never reads it as an address itself.
func normalizeHost(h string) (string, error) {
	if h == "" {
		return "", fmt.Errorf("empty host")
	}
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") {
			return "", fmt.Errorf("unclosed [ in the host")
		}
		inner := h[1 : len(h)-1]
		if strings.ContainsRune(inner, '%') {
			return "", fmt.Errorf("an IPv6 zone is refused")
		}
		a, err := netip.ParseAddr(inner)
		if err != nil || !a.Is6() {
			return "", fmt.Errorf("%q in brackets is not an IPv6 address", inner)
		}
		return a.String(), nil
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if !a.Is4() || a.String() != h {
			return "", fmt.Errorf("%q is not a canonical IPv4 address", h)
		}
		return h, nil
	}
	name := strings.ToLower(h)
	name = strings.TrimSuffix(name, ".")
	if err := checkDNSName(name); err != nil {
		return "", fmt.Errorf("host %q: %w", h, err)
	}
	return name, nil
}

// checkDNSName accepts letter-digit-hyphen labels (IDNs arrive as xn--
// punycode) whose last label is neither all digits nor 0x-hex, so that no
// resolver can take the name for a number.
func checkDNSName(name string) error {
	if name == "" || len(name) > 253 {
		return fmt.Errorf("not a DNS name (length)")
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("not a DNS name (empty or over-long label)")
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("not a DNS name (label starts or ends with -)")
		}
		for i := 0; i < len(l); i++ {
			if !isAlnum(l[i]) && l[i] != '-' {
				return fmt.Errorf("not a DNS name (byte %q)", l[i])
			}
		}
	}
	last := labels[len(labels)-1]
	if allDigits(last) || (strings.HasPrefix(last, "0x") && allHex(last[2:])) {
		return fmt.Errorf("a numeric-looking name is neither a DNS name nor a canonical IP address")
	}
	return nil
}

// parsePort accepts 1–65535 in plain decimal: no sign, no leading zero,
// no spaces (strconv.Atoi alone would take "+443" and "0443").
func parsePort(s string) (uint16, error) {
	if s == "" || len(s) > 5 || !allDigits(s) || s[0] == '0' {
		return 0, fmt.Errorf("port %q is not a decimal number from 1 to 65535", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not a decimal number from 1 to 65535", s)
	}
	return uint16(n), nil
}

func parseContentLength(s string) (int64, error) {
	if s == "" || len(s) > 15 || !allDigits(s) || (s[0] == '0' && len(s) > 1) {
		return 0, fmt.Errorf("Content-Length %q is not a plain decimal length", s)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("Content-Length %q: %w", s, err)
	}
	return n, nil
}

// checkHostHeader requires a Host header to name the request's own
// target: the same normalized host, and the same port (a missing port
// means the scheme's default).
func checkHostHeader(value, host string, port, defaultPort uint16) error {
	h, p, err := parseAuthority(value, true, defaultPort)
	if err != nil {
		return fmt.Errorf("the Host header: %w", err)
	}
	if h != host || p != port {
		return fmt.Errorf("the Host header %q disagrees with the target %s", value, net.JoinHostPort(host, strconv.Itoa(int(port))))
	}
	return nil
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && strings.IndexByte("!#$%&'*+-.^_`|~", c) < 0 {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return true
}
