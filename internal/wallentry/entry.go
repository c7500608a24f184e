package wallentry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/addonwall/addonwall/internal/cloexec"
	"github.com/addonwall/addonwall/internal/egress"
	"github.com/addonwall/addonwall/internal/splice"
)

// ExitEntryFailed is the entry's own exit code when the add-on never ran:
// a listener or the add-on's program could not be started. (125 is what
// env(1) and container runtimes use for "the wrapper failed".)
const ExitEntryFailed = 125

// maxConns bounds the connections the entry carries at once; one over the
// bound is closed at once. The relay keeps a bound of its own.
const maxConns = 512

// forwardedSignals are passed on to the add-on, which decides what they
// mean; the entry itself ends when the add-on does.
var forwardedSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// ReadConfig reads the config file the wall binds for the entry.
func ReadConfig(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("opening the entry's config %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return Config{}, fmt.Errorf("reading the entry's config %s: %w", path, err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Run listens as cfg says, starts the add-on argv (argv[0] an absolute
// path) with this process's fds 0, 1 and 2 and environment, passes
// signals on, and returns the add-on's exit code: 128+N when signal N
// ended it. An error means the add-on never ran; the code is then
// ExitEntryFailed.
func Run(ctx context.Context, cfg Config, argv []string) (int, error) {
	if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
		return ExitEntryFailed, errors.New("the add-on's command must be an absolute path")
	}
	// The add-on inherits exactly fds 0, 1 and 2: whatever else reached
	// this process (from bubblewrap or before it) stays here.
	if err := cloexec.AboveStdio(); err != nil {
		return ExitEntryFailed, err
	}
	e, err := start(ctx, cfg, net.Listen)
	if err != nil {
		return ExitEntryFailed, err
	}
	defer e.close()

	env := os.Environ()
	if env == nil {
		env = []string{} // nil would be this process's environment all the same, but say it
	}
	cmd := &exec.Cmd{Path: argv[0], Args: argv, Env: env, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return ExitEntryFailed, fmt.Errorf("starting the add-on %s: %w", argv[0], err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	st := cmd.ProcessState
	if st == nil {
		return ExitEntryFailed, fmt.Errorf("waiting for the add-on: %w", err)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return st.ExitCode(), nil
}

// entry is the entry's listeners, serving.
type entry struct {
	cfg    Config
	proxy  net.Listener
	lns    []net.Listener
	sem    chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// start listens on the proxy port and every forward and serves them until
// close. A listener that cannot be opened stops it (an optional forward is
// skipped), so the add-on never starts with half its network.
func start(ctx context.Context, cfg Config, listen func(network, addr string) (net.Listener, error)) (*entry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	e := &entry{cfg: cfg, sem: make(chan struct{}, maxConns), ctx: ctx, cancel: cancel}
	ln, err := listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.ProxyPort)))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("listening for the proxy on 127.0.0.1:%d (the add-on does not start): %w", cfg.ProxyPort, err)
	}
	e.proxy = ln
	e.lns = append(e.lns, ln)
	type fwd struct {
		ln     net.Listener
		target string
	}
	var fwds []fwd
	for _, f := range cfg.Forwards {
		ln, err := listen("tcp", f.Listen)
		if err != nil {
			if f.Optional {
				continue
			}
			e.close()
			return nil, fmt.Errorf("listening on %s for %s (the add-on does not start): %w", f.Listen, f.Target, err)
		}
		e.lns = append(e.lns, ln)
		fwds = append(fwds, fwd{ln, f.Target})
	}
	if cfg.DoorPort != 0 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.DoorPort))
		ln, err := listen("tcp", addr)
		if err != nil {
			e.close()
			return nil, fmt.Errorf("listening for the doors on %s (the add-on does not start): %w", addr, err)
		}
		e.lns = append(e.lns, ln)
		e.serve(ln, e.handleDoor)
	}
	e.serve(e.proxy, e.handleProxy)
	for _, f := range fwds {
		target := f.target
		e.serve(f.ln, func(c net.Conn) { e.handleForward(c, target) })
	}
	return e, nil
}

// close stops listening, ends every connection and waits for them.
func (e *entry) close() {
	e.cancel()
	for _, ln := range e.lns {
		_ = ln.Close()
	}
	e.wg.Wait()
}

func (e *entry) serve(ln net.Listener, handle func(net.Conn)) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		backoff := time.Duration(0)
		for {
			c, err := ln.Accept()
			if err != nil {
				if e.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
					return
				}
				// Out of descriptors: wait rather than spin.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(backoff):
				case <-e.ctx.Done():
					return
				}
				continue
			}
			backoff = 0
			select {
			case e.sem <- struct{}{}:
			default:
				_ = c.Close()
				continue
			}
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				defer func() { <-e.sem }()
				handle(c)
			}()
		}
	}()
}

// handleProxy carries a proxy client's bytes to the relay unread: the
// relay reads the request, judges it and answers.
func (e *entry) handleProxy(c net.Conn) {
	_ = egress.Forward(e.ctx, c, e.cfg.RelaySocket)
}

// handleDoor carries a door client's bytes to the spawn's door socket
// unread: the host side checks the token, the door and the target.
func (e *entry) handleDoor(c net.Conn) {
	_ = egress.Forward(e.ctx, c, e.cfg.DoorSocket)
}

// handleForward asks the relay for the forward's one target, then carries
// the client's bytes, whatever they say, to it.
func (e *entry) handleForward(c net.Conn, target string) {
	rc, err := egress.DialRelay(e.ctx, e.cfg.RelaySocket, target)
	if err != nil {
		// The refusal is the relay's to count; the client sees its
		// connection end.
		_ = c.Close()
		return
	}
	stop := context.AfterFunc(e.ctx, func() {
		_ = rc.Close()
		_ = c.Close()
	})
	defer stop()
	splice.Conns(c, rc)
}
