package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/decide"
	"github.com/addonwall/addonwall/internal/fixit"
)

// AddonWallReconciler converges each add-on to walled, not walled (with
// the reason) or off (with a Fix-it card).
type AddonWallReconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	// Switches are the host switches, read once from the controller's own
	// environment.
	Switches decide.Switches
	// Sessions prepares add-ons for connects and reports their children.
	Sessions Sessions
	// Failures holds the records behind Fix-it cards.
	Failures *fixit.Records
	// Hints wake the reconciler for one add-on when something it cannot
	// watch changed (a child stopped, a container started). Optional.
	Hints <-chan event.GenericEvent
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// +kubebuilder:rbac:groups=walls.addonwall.dev,resources=addonwalls,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=walls.addonwall.dev,resources=addonwalls/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=walls.addonwall.dev,resources=wallhosts,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile re-reads everything it decides from, decides, prepares the
// add-on for connects and writes status once, in a deferred patch.
func (r *AddonWallReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	log := logf.FromContext(ctx)
	var w wallsv1.AddonWall
	if err := r.Client.Get(ctx, req.NamespacedName, &w); err != nil {
		if apierrors.IsNotFound(err) {
			r.Sessions.Forget(req.Name)
			r.Failures.Clear(req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading add-on %s (will retry): %w", req.Name, err)
	}
	base := w.DeepCopy()
	defer func() {
		if equality.Semantic.DeepEqual(base.Status, w.Status) {
			return
		}
		if err := r.Client.Status().Patch(ctx, &w, client.MergeFrom(base)); err != nil {
			retErr = errors.Join(retErr, fmt.Errorf("writing the status of add-on %s (will retry): %w", w.Name, err))
		}
	}()

	host, hostKnown := r.hostFacts(ctx, req.Namespace)
	d := decide.Decide(decide.Input{Switches: r.Switches, Host: host, Addon: addonFacts(&w)})

	var adm Admission
	var admitErr error
	switch {
	case !hostKnown && dependsOnHost(d.Reason):
		// The host has not been probed yet: an answer that depends on
		// bubblewrap waits for the probe rather than guess.
		admitErr = errHostNotProbed
	case d.Mode == wallsv1.ModeOff:
		r.Sessions.Refuse(w.Name, d.Reason, d.Detail)
	default:
		adm, admitErr = r.Sessions.Admit(ctx, &w, d)
		if admitErr != nil {
			reason := wallsv1.ReasonWallFailed
			var re reasoned
			if errors.As(admitErr, &re) && re.Reason() != "" {
				reason = re.Reason()
			}
			r.Sessions.Refuse(w.Name, reason, admitErr.Error())
			log.Info("add-on stays off: its wall could not be prepared", "addon", w.Name, "reason", reason, "error", admitErr.Error())
		}
	}

	in := statusInput{
		Generation: w.Generation,
		Decision:   d,
		HostKnown:  hostKnown,
		Admission:  adm,
		AdmitErr:   admitErr,
		Observed:   r.Sessions.Observe(w.Name),
		Profile:    w.Spec.Profile,
	}
	out := computeStatus(in)
	if out.Mode == wallsv1.ModeOff && out.CardReason != "" {
		ref, rec, err := r.Failures.Raise(w.Name, out.CardReason)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("raising the Fix-it card of add-on %s (will retry): %w", w.Name, err)
		}
		out.Status.Failure = &wallsv1.FailureCard{Ref: ref, Reason: out.CardReason, Message: out.CardMessage, Since: metaTime(rec.Since)}
	} else {
		r.Failures.Clear(w.Name)
	}
	if base.Status.Mode != out.Status.Mode || base.Status.Reason != out.Status.Reason {
		r.Recorder.Eventf(&w, eventType(out.Status.Mode), out.Status.Reason, "%s", out.Status.Word)
	}
	applyStatus(&w.Status, out.Status, r.now())
	if out.Requeue > 0 {
		return ctrl.Result{RequeueAfter: out.Requeue}, nil
	}
	return ctrl.Result{}, nil
}

// dependsOnHost reports whether a decision's reason came from, or got
// past, the host's bubblewrap facts.
func dependsOnHost(reason string) bool {
	switch reason {
	case wallsv1.ReasonNoBubblewrap, wallsv1.ReasonBubblewrapUnusable, wallsv1.ReasonWalled,
		wallsv1.ReasonSharesCrowDatabase, wallsv1.ReasonUsesAllStorage:
		return true
	}
	return false
}

var errHostNotProbed = errors.New("this host's wall facts are not known yet; waiting for the WallHost probe")

// hostFacts reads what the WallHost reconciler found about this host. The
// WallHost is named after the namespace.
func (r *AddonWallReconciler) hostFacts(ctx context.Context, host string) (decide.Host, bool) {
	var h wallsv1.WallHost
	if err := r.Client.Get(ctx, client.ObjectKey{Name: host}, &h); err != nil {
		return decide.Host{}, false
	}
	b := h.Status.Bubblewrap
	if b.Reason == "" {
		return decide.Host{}, false
	}
	return decide.Host{
		BubblewrapInstalled: b.Installed,
		BubblewrapUsable:    b.Usable,
		ProbeReason:         b.Reason,
		ProbeMessage:        b.Message,
		SetprivAvailable:    h.Status.Setpriv.Available,
	}, true
}

func addonFacts(w *wallsv1.AddonWall) decide.Addon {
	return decide.Addon{
		OwnerChoice:     w.Spec.OwnerChoice,
		CrowDb:          w.Spec.Profile.CrowDb,
		Storage:         w.Spec.Profile.Storage,
		ApprovedBackend: w.Spec.ApprovedBackend,
		Transport:       w.Spec.Launcher.Transport,
		InputProblem:    w.Spec.InputProblem,
	}
}

func (r *AddonWallReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// SetupWithManager registers the reconciler. Status-only changes never
// wake it (GenerationChangedPredicate, plus the reconcile-request
// annotation); a change of the host's facts wakes every add-on of the host.
func (r *AddonWallReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("addonwall").
		For(&wallsv1.AddonWall{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{},
			predicate.AnnotationChangedPredicate{},
		))).
		Watches(&wallsv1.WallHost{}, handler.EnqueueRequestsFromMapFunc(r.wallsOfHost),
			builder.WithPredicates(hostFactsChanged{}))
	if r.Hints != nil {
		b = b.WatchesRawSource(source.Channel(r.Hints, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

// wallsOfHost lists every add-on of a host.
func (r *AddonWallReconciler) wallsOfHost(ctx context.Context, o client.Object) []ctrl.Request {
	var l wallsv1.AddonWallList
	if err := r.Client.List(ctx, &l, client.InNamespace(o.GetName())); err != nil {
		logf.FromContext(ctx).Error(err, "listing the add-ons of a host whose facts changed; they are re-checked at their next change", "host", o.GetName())
		return nil
	}
	reqs := make([]ctrl.Request, 0, len(l.Items))
	for _, w := range l.Items {
		reqs = append(reqs, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&w)})
	}
	return reqs
}
