package doors

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/go-logr/logr"
)

// Server serves door requests: exactly one checked request per
// connection, then close. It never reads past the request's announced
// end, so nothing a wall pipelines behind it reaches the handler.
type Server struct {
	// Registry judges tokens and door sets. Required.
	Registry *Registry
	// Handler serves each accepted request (the gateway, or a proxy to
	// it). It sees the request without the token header; AddonFrom on
	// the request's context names the add-on. Required.
	Handler http.Handler
	// Timeout bounds reading the whole request. If zero, 10 seconds.
	Timeout time.Duration
	// MaxResponseBytes bounds the handler's answer, which is buffered so
	// it can be sent with a Content-Length and Connection: close. If
	// zero, 1 MiB; a longer answer becomes a 502.
	MaxResponseBytes int
	// Log gets one line per refusal (the add-on and the reason, never the
	// target or a token) and, at V(1), one per served door.
	Log logr.Logger
	// OnRefusal, if set, is called with each refusal's reason (for
	// status counters); it must not block for long.
	OnRefusal func(Reason)
}

type addonKey struct{}

// AddonFrom returns the add-on id of a door request's context.
func AddonFrom(ctx context.Context) string {
	s, _ := ctx.Value(addonKey{}).(string)
	return s
}

// Serve serves door connections for addonID from l until l is closed.
// l must be the door listener of that one add-on's wall: the add-on id
// comes from where the connection arrived, never from the request.
func (s *Server) Serve(l net.Listener, addonID string) error {
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accepting door connections for %s (the door port stops): %w", addonID, err)
		}
		go s.ServeConn(c, addonID)
	}
}

// ServeConn serves one door connection of addonID and closes it.
func (s *Server) ServeConn(c net.Conn, addonID string) {
	defer c.Close()
	timeout := s.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	_ = c.SetDeadline(time.Now().Add(timeout))

	head, rest, reason := readHead(c)
	if reason != "" {
		s.refuse(c, addonID, reason)
		return
	}
	req, reason := s.Registry.Check(head, addonID)
	if reason != "" {
		s.refuse(c, addonID, reason)
		return
	}
	if int64(len(rest)) > req.ContentLength {
		s.refuse(c, addonID, ReasonPipelined)
		return
	}
	body := make([]byte, req.ContentLength)
	n := copy(body, rest)
	if _, err := io.ReadFull(c, body[n:]); err != nil {
		s.refuse(c, addonID, ReasonIncomplete)
		return
	}

	hr, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
	if err != nil {
		// The raw rules are stricter than net/http; if it still
		// disagrees, nothing is served.
		s.refuse(c, addonID, ReasonMalformed)
		return
	}
	hr.Header.Del(TokenHeader)
	hr.Body = io.NopCloser(bytes.NewReader(body))
	hr.RemoteAddr = c.RemoteAddr().String()
	hr = hr.WithContext(context.WithValue(context.Background(), addonKey{}, addonID))

	max := s.MaxResponseBytes
	if max == 0 {
		max = 1 << 20
	}
	w := &bufferedResponse{header: http.Header{}, max: max}
	s.call(w, hr)
	status := w.status
	if status < 200 || status > 599 {
		// 1xx would promise a second answer; anything else is not HTTP.
		status, w.body, w.header = http.StatusBadGateway, nil, http.Header{}
	}
	if w.over {
		status, w.body = http.StatusBadGateway, []byte("door answer too large\n")
		w.header = http.Header{"Content-Type": {"text/plain; charset=utf-8"}}
	}
	s.Log.V(1).Info("door request served", "addon", addonID, "door", req.Method+" "+req.Target, "status", status)
	writeResponse(c, status, w.header, w.body)
}

func (s *Server) call(w *bufferedResponse, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				w.status, w.body = http.StatusBadGateway, nil
				return
			}
			s.Log.Error(fmt.Errorf("%v", p), "the door handler panicked; answering 500")
			w.status, w.body, w.header = http.StatusInternalServerError, nil, http.Header{}
		}
	}()
	s.Handler.ServeHTTP(w, r)
	if w.status == 0 {
		w.status = http.StatusOK
	}
}

// readHead reads up to and including the first CRLF CRLF, and returns
// any bytes that arrived after it in the same reads.
func readHead(c net.Conn) (head, rest []byte, reason Reason) {
	buf := make([]byte, 0, 1024)
	tmp := make([]byte, 1024)
	for {
		n, err := c.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			if i+4 > MaxHeadBytes {
				return nil, nil, ReasonTooLarge
			}
			return buf[:i+4], buf[i+4:], ""
		}
		if len(buf) > MaxHeadBytes {
			return nil, nil, ReasonTooLarge
		}
		if err != nil {
			return nil, nil, ReasonIncomplete
		}
	}
}

func (s *Server) refuse(c net.Conn, addonID string, r Reason) {
	// Neither the target nor any header is logged: a wall could put its
	// token anywhere in the request.
	s.Log.Info("door request refused", "addon", addonID, "reason", string(r))
	if s.OnRefusal != nil {
		s.OnRefusal(r)
	}
	h := http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "Crow-Door-Refused": {string(r)}}
	writeResponse(c, r.Status(), h, []byte("door refused: "+string(r)+"\n"))
}

// hopByHop are fields the answer never carries from the handler: the
// server frames the answer itself.
var hopByHop = []string{"Connection", "Content-Length", "Transfer-Encoding", "Keep-Alive", "Upgrade", "Trailer", "Te", "Proxy-Connection"}

func writeResponse(c net.Conn, status int, h http.Header, body []byte) {
	h = h.Clone()
	for _, k := range hopByHop {
		h.Del(k)
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Connection", "close")
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %03d %s\r\n", status, http.StatusText(status))
	_ = h.Write(&b) // http.Header.Write drops CR and LF inside values
	b.WriteString("\r\n")
	b.Write(body)
	_, _ = c.Write(b.Bytes())
}

// bufferedResponse is an http.ResponseWriter that keeps the answer in
// memory, up to max bytes.
type bufferedResponse struct {
	header http.Header
	status int
	body   []byte
	max    int
	over   bool
}

func (w *bufferedResponse) Header() http.Header { return w.header }

func (w *bufferedResponse) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *bufferedResponse) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if len(w.body)+len(p) > w.max {
		w.over = true
		return 0, errors.New("door answer too large")
	}
	w.body = append(w.body, p...)
	return len(p), nil
}
