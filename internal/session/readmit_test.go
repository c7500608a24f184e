package session

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/controllers"
	"github.com/addonwall/addonwall/internal/decide"
)

type stubLaunch struct{}

func (stubLaunch) Start(context.Context, [3]*os.File) (Process, error) {
	return nil, errors.New("not started in this test")
}
func (stubLaunch) Walled() bool { return true }

// stubPreparer answers with err, or a walled launch when err is nil;
// during runs in the middle of a Prepare, as a reconcile would.
type stubPreparer struct {
	err    error
	calls  int
	during func()
}

func (p *stubPreparer) Prepare(context.Context, *wallsv1.AddonWall, decide.Decision) (Launch, controllers.Admission, error) {
	p.calls++
	if p.during != nil {
		p.during()
	}
	if p.err != nil {
		return nil, controllers.Admission{}, p.err
	}
	return stubLaunch{}, controllers.Admission{Tier: wallsv1.TierWalled}, nil
}

var walledDecision = decide.Decision{Mode: wallsv1.ModeWalled, Reason: wallsv1.ReasonWalled, Spawn: decide.SpawnWalled}

func addonWall(id string) *wallsv1.AddonWall {
	return &wallsv1.AddonWall{ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: "h"}}
}

// admitAndRefuse plays the reconciler's part for a failing admission.
func admitAndRefuse(t *testing.T, m *Manager, id string) {
	t.Helper()
	_, err := m.Admit(context.Background(), addonWall(id), walledDecision)
	if err == nil {
		t.Fatal("the admission was meant to fail")
	}
	var f *failure
	reason := wallsv1.ReasonWallFailed
	if errors.As(err, &f) {
		reason = f.reason
	}
	m.Refuse(id, reason, err.Error())
}

func TestConnectRetriesAPlanThatFailedOnDisk(t *testing.T) {
	p := &stubPreparer{err: fail(wallsv1.ReasonPlanFailed, "its data folder is a symlink")}
	m := &Manager{Log: logr.Discard(), Preparer: p}
	admitAndRefuse(t, m, "a")

	// Still failing: the connect gets the fresh refusal, not a launch.
	l, _, rep, tried := m.readmit(context.Background(), "a")
	if !tried || l != nil || rep.Reason != wallsv1.ReasonPlanFailed {
		t.Fatalf("retry while still failing: tried %v, launch %v, reply %+v", tried, l, rep)
	}
	// Fixed on disk: the next connect gets the walled launch, and keeps it.
	p.err = nil
	l, tier, _, tried := m.readmit(context.Background(), "a")
	if !tried || l == nil || !l.Walled() || tier != wallsv1.TierWalled {
		t.Fatalf("retry after the fix: tried %v, launch %v, tier %s", tried, l, tier)
	}
	if m.addons["a"].launch == nil || m.addons["a"].pending != nil {
		t.Fatal("the retried admission was not kept")
	}
	if _, _, _, tried := m.readmit(context.Background(), "a"); tried {
		t.Fatal("an admitted add-on was admitted again")
	}
}

func TestConnectDoesNotRetryOtherRefusals(t *testing.T) {
	// A decision to keep the add-on off is the reconciler's alone.
	p := &stubPreparer{}
	m := &Manager{Log: logr.Discard(), Preparer: p}
	m.Refuse("off", wallsv1.ReasonBubblewrapUnusable, "user namespaces refused")
	if _, _, _, tried := m.readmit(context.Background(), "off"); tried || p.calls != 0 {
		t.Fatalf("a decision was retried (tried %v, %d prepares)", tried, p.calls)
	}
	// Nor a failure that fresh facts cannot change.
	p.err = fail(wallsv1.ReasonSeccompFailed, "no filter")
	admitAndRefuse(t, m, "nofilter")
	p.err = nil
	if _, _, _, tried := m.readmit(context.Background(), "nofilter"); tried {
		t.Fatal("a filter failure was retried at connect")
	}
	// A plan failure followed by a decision to keep it off is not retried.
	p.err = fail(wallsv1.ReasonPlanFailed, "missing folder")
	admitAndRefuse(t, m, "later-off")
	m.Refuse("later-off", wallsv1.ReasonBubblewrapUnusable, "probe timed out")
	p.err = nil
	if _, _, _, tried := m.readmit(context.Background(), "later-off"); tried {
		t.Fatal("a plan failure superseded by a decision was retried")
	}
}

func TestConnectRetryYieldsToTheReconciler(t *testing.T) {
	p := &stubPreparer{err: fail(wallsv1.ReasonPlanFailed, "missing folder")}
	m := &Manager{Log: logr.Discard(), Preparer: p}
	admitAndRefuse(t, m, "a")
	p.err = nil
	// While the retry prepares, the reconciler decides the add-on is off.
	p.during = func() { m.Refuse("a", wallsv1.ReasonBubblewrapUnusable, "probe timed out") }
	l, _, rep, tried := m.readmit(context.Background(), "a")
	if !tried || l != nil || rep.Reason != wallsv1.ReasonBubblewrapUnusable {
		t.Fatalf("the retry overrode the reconciler: launch %v, reply %+v", l, rep)
	}
	if m.addons["a"].launch != nil {
		t.Fatal("the retry installed a launch over a newer refusal")
	}
}
