package session

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// A connect hands the controller its own stdin, stdout and stderr over the
// control socket (SCM_RIGHTS), and the child gets exactly those as its fds
// 0, 1 and 2: the add-on talks to the MCP client directly, as it would if
// Crow had started it, with no copying in between.

// sendStdio passes the three files over the connection.
func sendStdio(c *net.UnixConn, files [3]*os.File) error {
	fds := []int{int(files[0].Fd()), int(files[1].Fd()), int(files[2].Fd())}
	_, _, err := c.WriteMsgUnix([]byte{'F'}, unix.UnixRights(fds...), nil)
	if err != nil {
		return fmt.Errorf("handing stdin, stdout and stderr to the controller: %w", err)
	}
	return nil
}

// recvStdio receives exactly three descriptors, close-on-exec, so no other
// child started meanwhile inherits them.
func recvStdio(c *net.UnixConn) ([3]*os.File, error) {
	var out [3]*os.File
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return out, fmt.Errorf("receiving the connection's stdin, stdout and stderr: %w", err)
	}
	msgs, perr := unix.ParseSocketControlMessage(oob[:oobn])
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		fds = append(fds, got...)
	}
	for _, fd := range fds {
		unix.CloseOnExec(fd)
	}
	closeAll := func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
	switch {
	case perr != nil:
		closeAll()
		return out, fmt.Errorf("reading the passed descriptors: %w", perr)
	case flags&unix.MSG_CTRUNC != 0:
		closeAll()
		return out, errors.New("more descriptors were passed than stdin, stdout and stderr")
	case n != 1 || buf[0] != 'F' || len(fds) != 3:
		closeAll()
		return out, fmt.Errorf("expected stdin, stdout and stderr, got %d descriptors", len(fds))
	}
	names := [3]string{"stdin", "stdout", "stderr"}
	for i, fd := range fds {
		out[i] = os.NewFile(uintptr(fd), names[i])
	}
	return out, nil
}
