package session

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
)

// ControlServer serves the control socket: connects, and the owner's two
// choices. The socket is 0600 in a 0700 folder of the controller's, and
// every peer's credentials are checked: only the controller's own user (or
// root) is served.
type ControlServer struct {
	Path    string
	Log     logr.Logger
	Handler func(ctx context.Context, conn *net.UnixConn, req Request)
}

// Start listens on the socket. It refuses to replace a socket another
// controller still answers on.
func (s *ControlServer) Start(ctx context.Context) error {
	dir := filepath.Dir(s.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making the control socket's folder %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("making the control socket's folder %s owner-only: %w", dir, err)
	}
	if fi, err := os.Lstat(s.Path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("%s exists and is not a socket; move it away and start again", s.Path)
		}
		if c, err := net.DialTimeout("unix", s.Path, time.Second); err == nil {
			c.Close()
			return fmt.Errorf("another addonwall controller answers on %s; stop it first", s.Path)
		}
		if err := os.Remove(s.Path); err != nil {
			return fmt.Errorf("removing the stale control socket %s: %w", s.Path, err)
		}
	}
	// Listen on a temporary name, make it owner-only, then move it into
	// place, so the socket is never reachable with wider permissions.
	tmp := filepath.Join(dir, fmt.Sprintf(".control-%d.sock", os.Getpid()))
	_ = os.Remove(tmp)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return fmt.Errorf("listening on the control socket: %w", err)
	}
	l.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("making the control socket owner-only: %w", err)
	}
	if err := os.Rename(tmp, s.Path); err != nil {
		l.Close()
		return fmt.Errorf("moving the control socket into place: %w", err)
	}
	go func() {
		<-ctx.Done()
		l.Close()
		_ = os.Remove(s.Path)
	}()
	go s.serve(ctx, l)
	return nil
}

func (s *ControlServer) serve(ctx context.Context, l *net.UnixListener) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			s.Log.Error(err, "accepting on the control socket; going on")
			time.Sleep(50 * time.Millisecond)
			continue
		}
		go s.handle(ctx, c)
	}
}

func (s *ControlServer) handle(ctx context.Context, c *net.UnixConn) {
	if err := checkPeer(c); err != nil {
		s.Log.Info("refused a control connection", "error", err.Error())
		_ = writeLine(c, Reply{Message: "refused: " + err.Error()})
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var req Request
	if err := readLine(c, &req); err != nil {
		_ = writeLine(c, Reply{Message: err.Error()})
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	s.Handler(ctx, c, req)
}

// checkPeer serves only the controller's own user, or root.
func checkPeer(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return fmt.Errorf("reading the peer's credentials: %w", credErr)
	}
	if me := uint32(syscall.Getuid()); cred.Uid != me && cred.Uid != 0 {
		return fmt.Errorf("uid %d is not the controller's user (%d)", cred.Uid, me)
	}
	return nil
}
