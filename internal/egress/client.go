package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/addonwall/addonwall/internal/splice"
)

// These helpers are for the in-namespace entry, which holds nothing the
// add-on may not have: they carry bytes to the relay and read its answer,
// and decide nothing. The relay judges every request itself.

// Forward splices conn (a client of the in-namespace CONNECT proxy) with
// a new connection to the relay socket, byte for byte, until both sides
// are done. The relay reads and judges the request; conn is closed when
// Forward returns.
func Forward(ctx context.Context, conn net.Conn, socketPath string) error {
	defer func() { _ = conn.Close() }()
	var d net.Dialer
	rc, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return fmt.Errorf("connecting to the relay socket %s (the client's connection is closed): %w", socketPath, err)
	}
	stop := context.AfterFunc(ctx, func() {
		_ = rc.Close()
		_ = conn.Close()
	})
	defer stop()
	splice.Conns(conn, rc)
	return nil
}

// RefusedError is the relay's answer when it did not open the tunnel.
type RefusedError struct {
	Status int    // the HTTP status code
	Reason Reason // the stable reason, from the X-Addonwall-Reason header
	Target string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the relay refused %s: %d %s", e.Target, e.Status, e.Reason)
}

// DialRelay asks the relay for a tunnel to target ("host:port") and
// returns the connection once the relay answered 200, ready to carry the
// payload. A listed-port forwarder uses it, so whatever a client of that
// port sends goes to its one target and nowhere else. A refusal is a
// *RefusedError.
func DialRelay(ctx context.Context, socketPath, target string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("connecting to the relay socket %s: %w", socketPath, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	}
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("sending CONNECT %s to the relay: %w", target, err)
	}
	// Nothing past the answer's head may be taken from the tunnel: read
	// exactly as many bytes as the relay's success answer has (every
	// other answer is longer), then one byte at a time.
	head := make([]byte, len(connectEstablished))
	if _, err := io.ReadFull(c, head); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("reading the relay's answer to CONNECT %s: %w", target, err)
	}
	if string(head) == connectEstablished {
		_ = c.SetDeadline(time.Time{})
		return c, nil
	}
	b := make([]byte, 1)
	for !strings.HasSuffix(string(head), "\r\n\r\n") {
		if len(head) > MaxHeadBytes {
			_ = c.Close()
			return nil, fmt.Errorf("the relay's answer to CONNECT %s has an over-long head", target)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("reading the relay's answer to CONNECT %s: %w", target, err)
		}
		head = append(head, b[0])
	}
	_ = c.SetDeadline(time.Time{})
	lines := strings.Split(string(head), "\r\n")
	fields := strings.SplitN(lines[0], " ", 3)
	if len(fields) < 2 || fields[0] != "HTTP/1.1" {
		_ = c.Close()
		return nil, fmt.Errorf("the relay's answer to CONNECT %s is not HTTP/1.1: %q", target, lines[0])
	}
	status, err := strconv.Atoi(fields[1])
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("the relay's answer to CONNECT %s has no status code: %q", target, lines[0])
	}
	if status == 200 {
		return c, nil
	}
	_ = c.Close()
	rerr := &RefusedError{Status: status, Target: target}
	for _, l := range lines[1:] {
		if name, value, ok := strings.Cut(l, ":"); ok && strings.EqualFold(name, "X-Addonwall-Reason") {
			rerr.Reason = Reason(strings.TrimSpace(value))
		}
	}
	return nil, rerr
}
