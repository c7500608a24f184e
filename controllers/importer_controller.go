package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/paths"
	"github.com/addonwall/addonwall/internal/profile"
)

// importKey is the one request the importer works on: the whole Crow home.
const importKey = "crow-home"

// ImporterReconciler mirrors the Crow home into AddonWall specs: it
// creates, updates and deletes the AddonWalls it generated so that the
// store matches the owner's files. AddonWalls an owner wrote by hand (no
// managed-by annotation) are left alone.
type ImporterReconciler struct {
	Client   client.Client
	Recorder record.EventRecorder
	Paths    paths.Paths
	// Namespace is this host's namespace.
	Namespace string
	// TrustedDirs are folders whose programs are system launchers.
	TrustedDirs []string
	// Hints wake the importer when the Crow home's files change.
	Hints <-chan event.GenericEvent
	// Resync is how often the home is re-read without a hint (default 1 min).
	Resync time.Duration
	// Observe, when set, is told what was read on every pass (the notices
	// watch addon-walls.json through it).
	Observe func(ctx context.Context, h profile.Home)
	// Synced, when set, is called after every pass that brought the store
	// in line with the Crow home.
	Synced func()
}

// +kubebuilder:rbac:groups=walls.addonwall.dev,resources=addonwalls,verbs=get;list;watch;create;update;patch;delete

// Reconcile reads the Crow home and converges the store to it.
func (r *ImporterReconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	log := logf.FromContext(ctx)
	home := profile.Gather(r.Paths, r.TrustedDirs)
	if r.Observe != nil {
		r.Observe(ctx, home)
	}
	host := &wallsv1.WallHost{ObjectMeta: metav1.ObjectMeta{Name: r.Namespace}}
	for _, err := range []error{home.WallsErr, home.ProfilesErr} {
		if err != nil {
			log.Info("a Crow file is not valid; the add-ons it speaks for stay off until it is fixed", "error", err.Error())
			r.Recorder.Eventf(host, "Warning", wallsv1.ReasonInvalidInput, "%s", err.Error())
		}
	}
	specs, ok := profile.Specs(home)
	if !ok {
		log.Info("mcp-addons.json is not valid as a whole; keeping the add-ons as they were", "error", home.AddonsErr.Error())
		r.Recorder.Eventf(host, "Warning", wallsv1.ReasonInvalidInput, "%s; the add-ons are kept as they were", home.AddonsErr.Error())
		return reconcile.Result{RequeueAfter: r.resync()}, nil
	}
	var existing wallsv1.AddonWallList
	if err := r.Client.List(ctx, &existing, client.InNamespace(r.Namespace)); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the add-ons (will retry): %w", err)
	}
	have := map[string]*wallsv1.AddonWall{}
	for i := range existing.Items {
		have[existing.Items[i].Name] = &existing.Items[i]
	}
	var errs []error
	ids := make([]string, 0, len(specs))
	for id := range specs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := r.apply(ctx, id, specs[id], have[id]); err != nil {
			errs = append(errs, err)
		}
	}
	for id, w := range have {
		if _, wanted := specs[id]; wanted || w.Annotations[wallsv1.ManagedByAnnotation] != wallsv1.ManagedByImporter {
			continue
		}
		if err := r.Client.Delete(ctx, w, client.Preconditions{UID: &w.UID}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting add-on %s, whose entry is gone: %w", id, err))
			continue
		}
		log.Info("add-on removed: its entry left mcp-addons.json", "addon", id)
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, fmt.Errorf("%w (will retry)", err)
	}
	if r.Synced != nil {
		r.Synced()
	}
	return reconcile.Result{RequeueAfter: r.resync()}, nil
}

func (r *ImporterReconciler) apply(ctx context.Context, id string, spec wallsv1.AddonWallSpec, cur *wallsv1.AddonWall) error {
	if cur == nil {
		w := &wallsv1.AddonWall{
			ObjectMeta: metav1.ObjectMeta{
				Name:        id,
				Namespace:   r.Namespace,
				Annotations: map[string]string{wallsv1.ManagedByAnnotation: wallsv1.ManagedByImporter},
			},
			Spec: spec,
		}
		if err := r.Client.Create(ctx, w); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating add-on %s: %w", id, err)
		}
		return nil
	}
	if cur.Annotations[wallsv1.ManagedByAnnotation] != wallsv1.ManagedByImporter {
		return nil
	}
	if equality.Semantic.DeepEqual(cur.Spec, spec) {
		return nil
	}
	base := cur.DeepCopy()
	cur.Spec = spec
	if err := r.Client.Patch(ctx, cur, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating add-on %s: %w", id, err)
	}
	return nil
}

func (r *ImporterReconciler) resync() time.Duration {
	if r.Resync > 0 {
		return r.Resync
	}
	return time.Minute
}

// SetupWithManager registers the importer. It runs once at start, on every
// hint from the Crow home's files, when a generated AddonWall is changed
// or deleted in the store, and every Resync.
func (r *ImporterReconciler) SetupWithManager(mgr manager.Manager) error {
	key := types.NamespacedName{Namespace: r.Namespace, Name: importKey}
	toKey := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: key}}
	})
	kick := make(chan event.GenericEvent, 1)
	kick <- event.GenericEvent{Object: &wallsv1.AddonWall{}}
	b := builder.ControllerManagedBy(mgr).
		Named("importer").
		WatchesRawSource(source.Channel(kick, toKey)).
		Watches(&wallsv1.AddonWall{}, toKey, builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	if r.Hints != nil {
		b = b.WatchesRawSource(source.Channel(r.Hints, toKey))
	}
	return b.Complete(r)
}
