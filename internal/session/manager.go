// Package session runs add-ons per connection: it keeps what each
// reconciled add-on may run, serves the control socket, starts one child
// per connect (walled or not, as decided), attests and watches walled
// children from outside, and reports what it saw back to the reconciler.
package session

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/controllers"
	"github.com/addonwall/addonwall/internal/decide"
)

// Launch is how one connection's child is started, fixed when the add-on
// was admitted.
type Launch interface {
	// Start starts the child with stdio as its fds 0, 1 and 2. A walled
	// Launch never falls back to a weaker spawn: an error means no child.
	Start(ctx context.Context, stdio [3]*os.File) (Process, error)
	// Walled reports whether the child runs inside bubblewrap.
	Walled() bool
}

// Process is one running child.
type Process interface {
	// Pid is the add-on's own process, which attestation reads.
	Pid() int
	// Wait waits for the child and says how it ended.
	Wait() Exit
	// Kill ends the child and everything it started.
	Kill()
}

// Exit is how a child ended.
type Exit struct {
	Code int
	// Signal names the signal that ended it, if one did.
	Signal string
	// SetupFailed is true when the wall failed before the add-on ran;
	// Message then says why (bubblewrap's own words).
	SetupFailed bool
	Message     string
}

// Preparer builds the Launch for an admitted add-on.
type Preparer interface {
	Prepare(ctx context.Context, w *wallsv1.AddonWall, d decide.Decision) (Launch, controllers.Admission, error)
}

// startWindow is how long a child must live before its ending counts as
// "it stopped" rather than "it could not run inside its wall".
const startWindow = 2 * time.Second

// Manager is the session manager. It implements controllers.Sessions.
type Manager struct {
	Log       logr.Logger
	Namespace string
	Preparer  Preparer
	// Hints wakes the AddonWall reconciler for an add-on.
	Hints chan<- event.GenericEvent
	// Attest reads the evidence of a walled child; nil uses Attest.
	Attest func(pid int, walled bool, tier wallsv1.Tier) Evidence
	// Owner handles the owner's two choices; nil refuses them.
	Owner OwnerChoices

	mu     sync.Mutex
	addons map[string]*addon
}

// OwnerChoices is where "Run without the wall" and "Wall it again" go.
type OwnerChoices interface {
	Unwall(ref string) (id string, err error)
	Wall(id string) error
}

type addon struct {
	launch  Launch
	tier    wallsv1.Tier
	refusal Reply
	obs     controllers.Observed
	// pending is an admission the next connect tries again (readmit.go);
	// epoch counts admissions and refusals, so a retry never overwrites a
	// newer answer of the reconciler's.
	pending *pendingAdmission
	epoch   uint64
}

func (m *Manager) entry(id string) *addon {
	if m.addons == nil {
		m.addons = map[string]*addon{}
	}
	a := m.addons[id]
	if a == nil {
		a = &addon{}
		m.addons[id] = a
	}
	return a
}

// Admit implements controllers.Sessions.
func (m *Manager) Admit(ctx context.Context, w *wallsv1.AddonWall, d decide.Decision) (controllers.Admission, error) {
	l, adm, err := m.Preparer.Prepare(ctx, w, d)
	if err != nil {
		m.admitFailed(w, d, err)
		return controllers.Admission{}, err
	}
	if eo, ok := m.Preparer.(egressObserver); ok {
		eo.notifyEgress(m.hint)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.entry(w.Name)
	if a.tier != adm.Tier || (a.launch != nil && a.launch.Walled() != l.Walled()) {
		// A new kind of wall: old evidence says nothing about it.
		a.obs.Evidence, a.obs.Verified = "", false
	}
	a.launch, a.tier, a.refusal = l, adm.Tier, Reply{}
	a.pending, a.epoch = nil, a.epoch+1
	return adm, nil
}

// Refuse implements controllers.Sessions.
func (m *Manager) Refuse(id, reason, message string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.entry(id)
	a.launch = nil
	a.refusal = Reply{Reason: reason, Word: decide.Word(reason, decide.LangEN), Message: decide.Inert(message)}
	a.epoch++
	if !retryAtConnect(reason) {
		a.pending = nil
	}
}

// Forget implements controllers.Sessions.
func (m *Manager) Forget(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.addons, id)
	if eo, ok := m.Preparer.(egressObserver); ok {
		eo.forgetEgress(id)
	}
}

// Observe implements controllers.Sessions.
func (m *Manager) Observe(id string) controllers.Observed {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.addons[id]
	if !ok {
		return controllers.Observed{}
	}
	o := a.obs
	o.Refusals = copyCounts(o.Refusals)
	o.Latest = append([]string(nil), o.Latest...)
	if eo, ok := m.Preparer.(egressObserver); ok {
		o.Refusals, o.Latest = eo.egressObserved(id)
	}
	return o
}

func copyCounts(in map[string]int64) map[string]int64 {
	if in == nil {
		return nil
	}
	out := make(map[string]int64, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func (m *Manager) hint(id string) {
	if m.Hints == nil {
		return
	}
	ev := event.GenericEvent{Object: &wallsv1.AddonWall{ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: m.Namespace}}}
	select {
	case m.Hints <- ev:
	default:
		// The reconciler is behind; it re-reads everything when it gets to it.
	}
}

// Handle serves one control connection; it is the ControlServer's Handler.
func (m *Manager) Handle(ctx context.Context, c *net.UnixConn, req Request) {
	defer c.Close()
	switch req.Op {
	case OpConnect:
		m.connect(ctx, c, req.ID)
	case OpUnwall:
		if m.Owner == nil {
			_ = writeLine(c, Reply{Message: "this controller does not take owner choices"})
			return
		}
		id, err := m.Owner.Unwall(req.Ref)
		if err != nil {
			_ = writeLine(c, Reply{Message: err.Error()})
			return
		}
		_ = writeLine(c, Reply{OK: true, ID: id, Word: decide.Word(wallsv1.ReasonOwnerChoice, decide.LangEN)})
	case OpWall:
		if m.Owner == nil {
			_ = writeLine(c, Reply{Message: "this controller does not take owner choices"})
			return
		}
		if err := m.Owner.Wall(req.ID); err != nil {
			_ = writeLine(c, Reply{Message: err.Error()})
			return
		}
		_ = writeLine(c, Reply{OK: true, ID: req.ID})
	default:
		_ = writeLine(c, Reply{Message: fmt.Sprintf("unknown request %q", req.Op)})
	}
}
