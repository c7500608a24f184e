package session

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"

	"time"
)

// ErrNoController is returned when no controller answers on the socket.
var ErrNoController = errors.New("no addonwall controller answers on its control socket (start it with `addonwall run`, with the same --crow-home)")

// Dial opens a control connection and sends the request (and, for a
// connect, the stdio files); it returns the connection once the controller
// accepted it.
func Dial(ctx context.Context, socket string, req Request, stdio *[3]*os.File) (*net.UnixConn, Reply, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, Reply{}, fmt.Errorf("%w: %v", ErrNoController, err)
	}
	uc := c.(*net.UnixConn)
	if err := writeLine(uc, req); err != nil {
		uc.Close()
		return nil, Reply{}, fmt.Errorf("sending the request to the controller: %w", err)
	}
	if stdio != nil {
		if err := sendStdio(uc, *stdio); err != nil {
			uc.Close()
			return nil, Reply{}, err
		}
	}
	var rep Reply
	if err := readLine(uc, &rep); err != nil {
		uc.Close()
		return nil, Reply{}, fmt.Errorf("reading the controller's answer: %w", err)
	}
	if !rep.OK {
		uc.Close()
		return nil, rep, &Refused{Reply: rep}
	}
	return uc, rep, nil
}

// Refused is the controller's refusal of a request.
type Refused struct{ Reply Reply }

func (r *Refused) Error() string {
	switch {
	case r.Reply.Word != "" && r.Reply.Message != "":
		return r.Reply.Word + ": " + r.Reply.Message
	case r.Reply.Word != "":
		return r.Reply.Word
	default:
		return r.Reply.Message
	}
}

// Connect runs one session of an add-on on the given stdio files: it is
// what an MCP client's config runs as the add-on's command. The child gets
// the files as its fds 0, 1 and 2; Connect waits until the child ends and
// returns its exit code. Ending ctx (or this process) ends the child.
func Connect(ctx context.Context, socket, id string, stdio [3]*os.File) (int, error) {
	conn, _, err := Dial(ctx, socket, Request{Op: OpConnect, ID: id}, &stdio)
	if err != nil {
		return 1, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	var end Reply
	if err := readLine(conn, &end); err != nil {
		if ctx.Err() != nil {
			return 1, ctx.Err()
		}
		return 1, fmt.Errorf("the controller ended add-on %s's session without an answer: %w", id, err)
	}
	if !end.OK {
		return 1, &Refused{Reply: end}
	}
	return end.Exit, nil
}
