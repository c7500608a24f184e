package controllers

import (
	"context"
	"time"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/decide"
)

// Admission is what the session manager says about an add-on it prepared
// for connects.
type Admission struct {
	// Tier is the wall's strength, for a walled spawn.
	Tier wallsv1.Tier
	// PlanHash is the digest of the bind plan, for a walled spawn.
	PlanHash string
	// CodeDigest is the digest of the read-only code trees.
	CodeDigest string
	// Reach is the one-line summary of what the add-on can reach, in English.
	Reach string
	// Dropped are manifest defaults the network plan dropped, with why.
	Dropped []string
}

// Observed is what the running controller saw of an add-on's children.
type Observed struct {
	// Active is how many connections run now.
	Active int32
	// LastStart and LastExit are when the last child started and ended.
	LastStart, LastExit time.Time
	// LastExitReason says why the last child ended.
	LastExitReason string
	// Failure, when not empty, is the reason the last child failed
	// (WallFailed, Stopped, OverLimit, WallNotVerified), and FailureMessage
	// what happened. It holds until the next connect starts a child.
	Failure, FailureMessage string
	// Evidence is what attestation read from the last walled child; empty
	// when none has run under the current plan.
	Evidence string
	// Verified is true when that evidence matched the plan.
	Verified bool
	// Refusals and Latest are the relay's refusals of the current plan.
	Refusals map[string]int64
	Latest   []string
}

// Sessions is the session manager as the AddonWall reconciler sees it.
type Sessions interface {
	// Admit prepares the add-on for connects under the decision. For a
	// walled decision it gathers the facts, builds the plan and the filter;
	// an error means the add-on stays off, and its Reason() (when it has
	// one) says why.
	Admit(ctx context.Context, w *wallsv1.AddonWall, d decide.Decision) (Admission, error)
	// Refuse makes connects to the add-on fail with the reason.
	Refuse(id, reason, message string)
	// Forget drops the add-on: it no longer exists.
	Forget(id string)
	// Observe returns what the running controller saw of the add-on.
	Observe(id string) Observed
}

// reasoned is an error that knows which api reason it stands for.
type reasoned interface {
	error
	Reason() string
}
