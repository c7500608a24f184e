package session

import (
	"context"
	"errors"
	"fmt"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/decide"
)

// An admission can fail on facts of the file system that nothing watches:
// a data folder or a granted folder that is, for now, a symlink or missing.
// The add-on is then off with a card, and the seed says the next connect
// tries again. Without that, a connect would answer with the old refusal
// until some watched Crow file changed, long after the owner fixed the
// folder. A retry builds the plan from fresh facts through the same
// Preparer: it can only ever produce the walled launch the reconciler would
// have, never a weaker one.

// pendingAdmission is the reconciler's request whose admission failed.
type pendingAdmission struct {
	w *wallsv1.AddonWall
	d decide.Decision
}

// retryAtConnect reports whether a refusal for reason is tried again at
// the next connect: only a plan that failed on what it found on disk.
// Decisions (bubblewrap unusable, bad input) are the reconciler's alone.
func retryAtConnect(reason string) bool { return reason == wallsv1.ReasonPlanFailed }

// admitFailed keeps a failed admission for the next connect, or forgets an
// older one.
func (m *Manager) admitFailed(w *wallsv1.AddonWall, d decide.Decision, err error) {
	var f *failure
	retry := errors.As(err, &f) && retryAtConnect(f.reason) && d.Walled()
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.entry(w.Name)
	a.epoch++
	a.pending = nil
	if retry {
		a.pending = &pendingAdmission{w: w.DeepCopy(), d: d}
	}
}

// readmit tries a pending admission again. It returns the launch when the
// plan now builds, or the new refusal when it still does not; ok is false
// when there was nothing to try. Either way the reconciler is woken to
// write the status from its own admission.
func (m *Manager) readmit(ctx context.Context, id string) (l Launch, tier wallsv1.Tier, refusal Reply, ok bool) {
	m.mu.Lock()
	a, known := m.addons[id]
	if !known || a.pending == nil || a.launch != nil {
		m.mu.Unlock()
		return nil, "", Reply{}, false
	}
	p, epoch := a.pending, a.epoch
	m.mu.Unlock()
	defer m.hint(id)

	l, adm, err := m.Preparer.Prepare(ctx, p.w, p.d)
	if err != nil {
		reason := wallsv1.ReasonPlanFailed
		var f *failure
		if errors.As(err, &f) {
			reason = f.reason
		}
		return nil, "", failureReply(reason, err.Error()), true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, known = m.addons[id]
	switch {
	case !known:
		return nil, "", Reply{Message: fmt.Sprintf("the running controller knows no add-on %q", decide.Inert(id))}, true
	case a.epoch != epoch:
		// The reconciler answered meanwhile: its answer stands.
		return a.launch, a.tier, a.refusal, true
	}
	a.launch, a.tier, a.refusal = l, adm.Tier, Reply{}
	a.pending, a.epoch = nil, a.epoch+1
	return l, adm.Tier, Reply{}, true
}
