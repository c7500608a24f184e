package session

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/controllers"
	"github.com/addonwall/addonwall/internal/decide"
)

// attestWait bounds how long attestation waits for the child to show its
// wall (the filter is applied just before the add-on's program runs).
const attestWait = 3 * time.Second

// clientGrace is how long a child's end waits to see whether its client
// went away at the same time.
const clientGrace = 50 * time.Millisecond

// ending is how a session ended, as the reconciler and the client see it.
type ending struct {
	exit    int
	reason  string // "" for a normal end
	message string
}

func (m *Manager) connect(ctx context.Context, c *net.UnixConn, id string) {
	stdio, err := recvStdio(c)
	if err != nil {
		_ = writeLine(c, Reply{Message: err.Error()})
		return
	}
	defer closeFiles(stdio)

	m.mu.Lock()
	a, known := m.addons[id]
	var l Launch
	var tier wallsv1.Tier
	var refusal Reply
	var limits Limits
	if known {
		l, tier, refusal = a.launch, a.tier, a.refusal
		if ll, ok := l.(interface{ Limits() Limits }); ok {
			limits = ll.Limits()
		}
	}
	m.mu.Unlock()
	if known && l == nil {
		// An admission that failed on the file system is tried again now.
		if rl, rt, rr, tried := m.readmit(ctx, id); tried {
			l, tier, refusal = rl, rt, rr
			if ll, ok := l.(interface{ Limits() Limits }); ok {
				limits = ll.Limits()
			}
		}
	}
	switch {
	case !known:
		_ = writeLine(c, Reply{Message: fmt.Sprintf("the running controller knows no add-on %q", decide.Inert(id))})
		return
	case l == nil:
		_ = writeLine(c, refusal)
		return
	}

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := time.Now()
	p, err := l.Start(cctx, stdio)
	// The child holds its own stdin and stdout now. Stderr stays open until
	// the session ends: a wall's stderr is copied through the controller,
	// which keeps bubblewrap's words for a card, and closing it here would
	// break the copy (the add-on's next write to stderr would fail).
	closeFiles([3]*os.File{stdio[0], stdio[1], nil})
	if err != nil {
		reason := wallsv1.ReasonWallFailed
		if !l.Walled() {
			reason = wallsv1.ReasonStopped
		}
		m.end(id, started, false, ending{exit: -1, reason: reason, message: "it could not start: " + err.Error()})
		_ = writeLine(c, failureReply(reason, "it could not start: "+err.Error()))
		return
	}
	m.begin(id, started)
	if err := writeLine(c, Reply{OK: true}); err != nil {
		p.Kill()
		m.end(id, started, true, ending{exit: p.Wait().Code, message: "the connection ended"})
		return
	}

	exited := make(chan Exit, 1)
	go func() { exited <- p.Wait() }()
	gone := make(chan struct{})
	go func() {
		var b [1]byte
		_, _ = c.Read(b[:])
		close(gone)
	}()
	verdict := make(chan ending, 1)
	if l.Walled() {
		go func() {
			if e, bad := m.attest(cctx, id, p.Pid(), tier); bad {
				verdict <- e
			}
		}()
		go func() {
			if e, over := watchLimits(cctx, p.Pid(), limits); over {
				verdict <- e
			}
		}()
	}

	var e ending
	select {
	case <-gone:
		p.Kill()
		e = ending{exit: (<-exited).Code, message: "the connection ended"}
	case x := <-exited:
		e = classify(l.Walled(), time.Since(started), x)
		// A client that went away closes the child's stdin too, and the
		// two can arrive in either order: a client gone at the same time
		// means the session ended, not the child.
		select {
		case <-gone:
			e = ending{exit: x.Code, message: "the connection ended"}
		case <-time.After(clientGrace):
		}
	case v := <-verdict:
		p.Kill()
		v.exit = (<-exited).Code
		e = v
	case <-ctx.Done():
		p.Kill()
		e = ending{exit: (<-exited).Code, message: "the controller is stopping"}
	}
	m.end(id, started, true, e)
	if e.reason != "" {
		_ = writeLine(c, failureReply(e.reason, e.message))
		return
	}
	_ = writeLine(c, Reply{OK: true, Exit: e.exit})
}

// classify says how a child that ended by itself, while its connection was
// open, ended. An MCP server ends its session with exit code 0 when its
// client closes stdin; anything else is the child going away.
func classify(walled bool, ran time.Duration, x Exit) ending {
	e := ending{exit: x.Code}
	how := fmt.Sprintf("it exited with code %d", x.Code)
	if x.Signal != "" {
		how = "it was ended by " + x.Signal
	}
	switch {
	case x.SetupFailed:
		e.reason, e.message = wallsv1.ReasonWallFailed, "its wall could not be set up: "+x.Message
	case x.Code == 0 && x.Signal == "":
		e.message = "it ended its session"
	case walled && ran < startWindow:
		e.reason, e.message = wallsv1.ReasonWallFailed, how+" right after starting inside its wall"
	default:
		e.reason, e.message = wallsv1.ReasonStopped, how
	}
	return e
}

func failureReply(reason, message string) Reply {
	return Reply{Reason: reason, Word: decide.Word(reason, decide.LangEN), Message: decide.Inert(message)}
}

// attest waits for the child to show its wall and records the evidence. It
// reports bad when the wall does not verify: the child is then ended.
func (m *Manager) attest(ctx context.Context, id string, pid int, tier wallsv1.Tier) (ending, bool) {
	read := m.Attest
	if read == nil {
		read = Attest
	}
	deadline := time.Now().Add(attestWait)
	var ev Evidence
	var err error
	for {
		ev = read(pid, true, tier)
		if err = ev.Verify(tier); err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if ctx.Err() != nil {
		return ending{}, false
	}
	m.mu.Lock()
	if a, ok := m.addons[id]; ok {
		a.obs.Evidence, a.obs.Verified = ev.String(), err == nil
	}
	m.mu.Unlock()
	m.hint(id)
	if err != nil {
		return ending{reason: wallsv1.ReasonWallNotVerified, message: err.Error()}, true
	}
	return ending{}, false
}

func (m *Manager) begin(id string, at time.Time) {
	m.mu.Lock()
	a := m.entry(id)
	a.obs.Active++
	a.obs.LastStart = at
	// The next connect tries again: an earlier failure no longer holds.
	a.obs.Failure, a.obs.FailureMessage = "", ""
	m.mu.Unlock()
	m.hint(id)
}

func (m *Manager) end(id string, started time.Time, wasActive bool, e ending) {
	m.mu.Lock()
	a := m.entry(id)
	if wasActive && a.obs.Active > 0 {
		a.obs.Active--
	}
	a.obs.LastExit = time.Now()
	a.obs.LastExitReason = e.message
	if e.reason != "" {
		a.obs.Failure, a.obs.FailureMessage = e.reason, e.message
	}
	m.mu.Unlock()
	m.Log.Info("session ended", "addon", id, "ran", time.Since(started).Round(time.Millisecond).String(), "exit", e.exit, "reason", e.reason)
	m.hint(id)
}

func closeFiles(fs [3]*os.File) {
	for _, f := range fs {
		if f != nil {
			f.Close()
		}
	}
}

var _ controllers.Sessions = (*Manager)(nil)
