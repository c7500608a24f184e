package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/decide"
)

// HostProber finds what this host can do. Its answers may be cached; it
// decides how long (a failed bubblewrap probe is asked again sooner than a
// good one).
type HostProber interface {
	Bubblewrap(ctx context.Context) wallsv1.BubblewrapStatus
	Seccomp() wallsv1.SeccompStatus
	Setpriv(ctx context.Context) wallsv1.ToolStatus
	Docker(ctx context.Context) wallsv1.DockerStatus
}

// WallHostReconciler keeps this host's WallHost: the switches as read,
// bubblewrap, seccomp, setpriv and docker.
type WallHostReconciler struct {
	Client   client.Client
	Switches decide.Switches
	Prober   HostProber
	// Name is this host's WallHost name (the host's namespace).
	Name string
	// Resync is how often the host is probed again (default 5 minutes).
	Resync time.Duration
	// Hints wake the reconciler when something it cannot watch changed
	// (the docker watch went up or down). Optional.
	Hints <-chan event.GenericEvent
}

// +kubebuilder:rbac:groups=walls.addonwall.dev,resources=wallhosts,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=walls.addonwall.dev,resources=wallhosts/status,verbs=get;update;patch

// Reconcile probes the host and writes the WallHost status once.
func (r *WallHostReconciler) Reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, retErr error) {
	if req.Name != r.Name {
		// Another host's WallHost (fleet mode): not ours to probe.
		return reconcile.Result{}, nil
	}
	var h wallsv1.WallHost
	err := r.Client.Get(ctx, req.NamespacedName, &h)
	if apierrors.IsNotFound(err) {
		h = wallsv1.WallHost{ObjectMeta: metav1.ObjectMeta{Name: r.Name}}
		if err := r.Client.Create(ctx, &h); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, fmt.Errorf("creating this host's WallHost %s (will retry): %w", r.Name, err)
		}
		// Its creation wakes this reconciler again.
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading this host's WallHost %s (will retry): %w", r.Name, err)
	}
	base := h.DeepCopy()
	defer func() {
		if equality.Semantic.DeepEqual(base.Status, h.Status) {
			return
		}
		if err := r.Client.Status().Patch(ctx, &h, client.MergeFrom(base)); err != nil {
			retErr = errors.Join(retErr, fmt.Errorf("writing this host's WallHost status (will retry): %w", err))
		}
	}()

	st := &h.Status
	st.ObservedGeneration = h.Generation
	st.Switches = r.Switches.Status()
	st.Bubblewrap = r.Prober.Bubblewrap(ctx)
	st.Seccomp = r.Prober.Seccomp()
	st.Setpriv = r.Prober.Setpriv(ctx)
	st.Docker = r.Prober.Docker(ctx)
	for _, c := range hostConditions(st, r.Switches) {
		c.ObservedGeneration = h.Generation
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return reconcile.Result{RequeueAfter: r.resync()}, nil
}

func (r *WallHostReconciler) resync() time.Duration {
	if r.Resync > 0 {
		return r.Resync
	}
	return 5 * time.Minute
}

// hostConditions sets every host condition, always, with a reason.
func hostConditions(st *wallsv1.WallHostStatus, sw decide.Switches) []metav1.Condition {
	walls := metav1.Condition{Type: wallsv1.WallsOnCondition, Status: metav1.ConditionFalse, Reason: wallsv1.ReasonWallsOff}
	switch {
	case sw.WallsOn():
		walls.Status, walls.Reason, walls.Message = metav1.ConditionTrue, wallsv1.ReasonWallsOn, "CROW_ADDON_WALLS_DEFAULT=walled"
	case sw.KillSwitch:
		walls.Reason, walls.Message = wallsv1.ReasonKillSwitch, decide.Word(wallsv1.ReasonKillSwitch, decide.LangEN)
	default:
		walls.Reason, walls.Message = wallsv1.ReasonHostDefaultOff, decide.Word(wallsv1.ReasonHostDefaultOff, decide.LangEN)
	}
	b := st.Bubblewrap
	bw := metav1.Condition{Type: wallsv1.BubblewrapUsableCondition, Status: metav1.ConditionFalse, Reason: b.Reason, Message: b.Message}
	if b.Usable {
		bw.Status = metav1.ConditionTrue
	}
	if bw.Reason == "" {
		bw.Status, bw.Reason = metav1.ConditionUnknown, wallsv1.ReasonUnknown
	}
	dk := metav1.Condition{Type: wallsv1.DockerWatchedCondition, Status: metav1.ConditionFalse, Reason: wallsv1.ReasonDockerUnreachable, Message: st.Docker.Message}
	if st.Docker.Watched {
		dk.Status, dk.Reason, dk.Message = metav1.ConditionTrue, wallsv1.ReasonDockerWatched, "docker "+st.Docker.Version
	} else if st.Docker.Reachable {
		dk.Reason = wallsv1.ReasonDockerWatched
		dk.Status, dk.Message = metav1.ConditionFalse, "docker "+st.Docker.Version+" answers, but its event watch is not live"
	}
	return []metav1.Condition{walls, bw, dk}
}

// SetupWithManager registers the reconciler, and a runnable that makes
// sure this host's WallHost is reconciled at start even before it exists.
func (r *WallHostReconciler) SetupWithManager(mgr manager.Manager) error {
	kick := make(chan event.GenericEvent, 1)
	kick <- event.GenericEvent{Object: &wallsv1.WallHost{ObjectMeta: metav1.ObjectMeta{Name: r.Name}}}
	b := builder.ControllerManagedBy(mgr).
		Named("wallhost").
		For(&wallsv1.WallHost{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(kick, &handler.EnqueueRequestForObject{}))
	if r.Hints != nil {
		b = b.WatchesRawSource(source.Channel(r.Hints, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

// hostFactsChanged lets through WallHost changes that alter what the
// AddonWall reconciler reads: bubblewrap and setpriv.
type hostFactsChanged struct{ predicate.Funcs }

func (hostFactsChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*wallsv1.WallHost)
	n, ok2 := e.ObjectNew.(*wallsv1.WallHost)
	if !ok1 || !ok2 {
		return true
	}
	return !equality.Semantic.DeepEqual(o.Status.Bubblewrap, n.Status.Bubblewrap) ||
		o.Status.Setpriv != n.Status.Setpriv
}
