package controllers

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/decide"
)

// statusInput is everything the status is computed from.
type statusInput struct {
	Generation int64
	Decision   decide.Decision
	HostKnown  bool
	Admission  Admission
	AdmitErr   error
	Observed   Observed
	Profile    wallsv1.Profile
}

// statusOutput is the computed status, and the card to raise when off.
type statusOutput struct {
	Status      wallsv1.AddonWallStatus
	Mode        wallsv1.Mode
	CardReason  string
	CardMessage string
	Requeue     time.Duration
}

// hostProbeWait is how soon an add-on is looked at again while the host
// has not been probed.
const hostProbeWait = 2 * time.Second

// computeStatus is pure: the same input gives the same status. Each
// condition is set by one function below, always, with a reason.
func computeStatus(in statusInput) statusOutput {
	var out statusOutput
	d := in.Decision
	mode, reason, message := d.Mode, d.Reason, d.Detail
	waiting := errors.Is(in.AdmitErr, errHostNotProbed)
	switch {
	case waiting:
		mode, reason, message = "", wallsv1.ReasonProgressing, in.AdmitErr.Error()
		out.Requeue = hostProbeWait
	case in.AdmitErr != nil:
		mode, reason, message = wallsv1.ModeOff, reasonOf(in.AdmitErr), in.AdmitErr.Error()
	case in.Observed.Failure != "" && d.Spawn != decide.SpawnNone:
		mode, reason, message = wallsv1.ModeOff, in.Observed.Failure, in.Observed.FailureMessage
	}
	s := &out.Status
	out.Mode = mode
	s.Mode = mode
	s.Reason = reason
	if mode != "" {
		s.Word = decide.Word(reason, decide.LangEN)
	}
	if mode == wallsv1.ModeOff {
		out.CardReason = reason
		card := decide.Explain(reason, decide.LangEN)
		out.CardMessage = cardMessage(card, message)
	}
	walledSpawn := d.Walled() && in.AdmitErr == nil
	if walledSpawn {
		s.Tier = in.Admission.Tier
		s.PlanHash = in.Admission.PlanHash
		s.CodeDigest = in.Admission.CodeDigest
		s.Egress.Dropped = in.Admission.Dropped
		s.Egress.Refusals = in.Observed.Refusals
		s.Egress.Latest = in.Observed.Latest
	}
	s.Reach = reachLine(in, walledSpawn)
	s.Sessions = sessionStatus(in.Observed)
	if !waiting {
		s.ObservedGeneration = in.Generation
	}
	s.Conditions = []metav1.Condition{
		walledCondition(mode, reason),
		planValidCondition(d, in.AdmitErr, waiting),
		packagesReadyCondition(),
		wallVerifiedCondition(walledSpawn, in.Observed),
		stalledCondition(mode, reason),
	}
	s.Conditions = append(s.Conditions, readyCondition(mode, reason, message, waiting))
	for i := range s.Conditions {
		s.Conditions[i].ObservedGeneration = in.Generation
	}
	return out
}

func reasonOf(err error) string {
	var re reasoned
	if errors.As(err, &re) && re.Reason() != "" {
		return re.Reason()
	}
	return wallsv1.ReasonWallFailed
}

// cardMessage joins the card's fixed text with what happened. The detail
// is outside text (a path, a probe message) and is made inert.
func cardMessage(c decide.Card, detail string) string {
	msg := c.What
	if detail != "" {
		msg += " (" + decide.Inert(detail) + ")"
	}
	if c.Do != "" {
		msg += " " + c.Do
	}
	return msg
}

// reachLine is the sandbox line: what a walled add-on can reach, or, for
// one that runs without a wall, that it reaches what its user can.
func reachLine(in statusInput, walled bool) string {
	switch {
	case walled && in.Admission.Reach != "":
		return in.Admission.Reach
	case walled:
		return decide.Reach(decide.ReachOf(in.Profile), decide.LangEN)
	case in.Decision.Spawn == decide.SpawnPlain || in.Decision.Spawn == decide.SpawnSetpriv:
		return "everything Crow's user can reach (no wall)"
	default:
		return ""
	}
}

func sessionStatus(o Observed) wallsv1.SessionStatus {
	s := wallsv1.SessionStatus{Active: o.Active, LastExitReason: o.LastExitReason}
	if !o.LastStart.IsZero() {
		t := metaTime(o.LastStart)
		s.LastStart = &t
	}
	if !o.LastExit.IsZero() {
		t := metaTime(o.LastExit)
		s.LastExit = &t
	}
	return s
}

func walledCondition(mode wallsv1.Mode, reason string) metav1.Condition {
	c := metav1.Condition{Type: wallsv1.WalledCondition, Status: metav1.ConditionFalse, Reason: reason}
	switch mode {
	case wallsv1.ModeWalled:
		c.Status, c.Message = metav1.ConditionTrue, "the add-on runs inside its wall"
	case "":
		c.Status, c.Message = metav1.ConditionUnknown, "waiting for the host's facts"
	default:
		c.Message = decide.Word(reason, decide.LangEN)
	}
	return c
}

func planValidCondition(d decide.Decision, admitErr error, waiting bool) metav1.Condition {
	c := metav1.Condition{Type: wallsv1.PlanValidCondition}
	switch {
	case waiting:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, wallsv1.ReasonProgressing, "waiting for the host's facts"
	case !d.Walled():
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, wallsv1.ReasonNotApplicable, "no walled spawn, so no bind plan"
	case admitErr != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, reasonOf(admitErr), decide.Inert(admitErr.Error())
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, wallsv1.ReasonReconciled, "the bind plan and the filter were built"
	}
	return c
}

// packagesReadyCondition: prepare runs (warm-up) are not part of this
// build; an add-on's packages must already be installed where its plan
// binds them.
func packagesReadyCondition() metav1.Condition {
	return metav1.Condition{Type: wallsv1.PackagesReadyCondition, Status: metav1.ConditionTrue,
		Reason: wallsv1.ReasonNoPrepareSteps, Message: "this build runs no prepare steps; packages are used as installed"}
}

func wallVerifiedCondition(walled bool, o Observed) metav1.Condition {
	c := metav1.Condition{Type: wallsv1.WallVerifiedCondition}
	switch {
	case !walled:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, wallsv1.ReasonNotApplicable, "no walled child"
	case o.Evidence == "":
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, wallsv1.ReasonNotYetSpawned, "no child has run under this plan yet"
	case o.Verified:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, wallsv1.ReasonVerified, o.Evidence
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, wallsv1.ReasonWallNotVerified, o.Evidence
	}
	return c
}

func stalledCondition(mode wallsv1.Mode, reason string) metav1.Condition {
	c := metav1.Condition{Type: wallsv1.StalledCondition, Status: metav1.ConditionFalse, Reason: wallsv1.ReasonReconciled}
	switch {
	case mode == wallsv1.ModeOff && (reason == wallsv1.ReasonInvalidInput || reason == wallsv1.ReasonPlanFailed):
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, reason, "nothing changes until the add-on's files do"
	case mode == wallsv1.ModeOff && reason == wallsv1.ReasonBubblewrapUnusable:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, reason, "nothing changes until bubblewrap can start a sandbox here"
	}
	return c
}

// readyCondition is computed from the mode alone: ready when the add-on
// converged to walled or not walled.
func readyCondition(mode wallsv1.Mode, reason, message string, waiting bool) metav1.Condition {
	c := metav1.Condition{Type: wallsv1.ReadyCondition, Reason: reason}
	switch {
	case waiting:
		c.Status, c.Message = metav1.ConditionUnknown, "waiting for the host's facts"
	case mode == wallsv1.ModeOff:
		c.Status, c.Message = metav1.ConditionFalse, fmt.Sprintf("%s: %s", decide.Word(reason, decide.LangEN), decide.Inert(message))
	default:
		c.Status, c.Message = metav1.ConditionTrue, decide.Word(reason, decide.LangEN)
	}
	return c
}

// applyStatus copies the computed status onto the object, keeping each
// condition's transition time when its status did not change.
func applyStatus(dst *wallsv1.AddonWallStatus, src wallsv1.AddonWallStatus, now time.Time) {
	conds := dst.Conditions
	failure := dst.Failure
	*dst = src
	dst.Conditions = conds
	if src.Failure != nil && failure != nil && failure.Ref == src.Failure.Ref {
		dst.Failure = failure
	}
	keep := map[string]bool{}
	for _, c := range src.Conditions {
		c.LastTransitionTime = metaTime(now)
		meta.SetStatusCondition(&dst.Conditions, c)
		keep[c.Type] = true
	}
	for _, c := range append([]metav1.Condition(nil), dst.Conditions...) {
		if !keep[c.Type] {
			meta.RemoveStatusCondition(&dst.Conditions, c.Type)
		}
	}
}

func metaTime(t time.Time) metav1.Time { return metav1.NewTime(t.UTC().Truncate(time.Second)) }

func eventType(m wallsv1.Mode) string {
	if m == wallsv1.ModeOff {
		return "Warning"
	}
	return "Normal"
}
