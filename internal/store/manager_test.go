package store

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
)

// seenReconciler is a tiny controller for the manager test: it writes a
// Ready condition naming the add-on's command, with one status patch.
type seenReconciler struct {
	client.Client
	reconciles atomic.Int64
}

func (r *seenReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.reconciles.Add(1)
	var w wallsv1.AddonWall
	if err := r.Get(ctx, req.NamespacedName, &w); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	base := w.DeepCopy()
	meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{
		Type: wallsv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Seen",
		Message: "command " + w.Spec.Launcher.Command, ObservedGeneration: w.Generation,
	})
	w.Status.ObservedGeneration = w.Generation
	return reconcile.Result{}, r.Status().Patch(ctx, &w, client.MergeFrom(base))
}

func TestManagerRunsOnTheStoreWithNoAPIServer(t *testing.T) {
	s := openStore(t, "")
	opts := s.ManagerOptions(manager.Options{
		Logger:     testr.New(t),
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	mgr, err := manager.New(FileStoreConfig(), opts)
	if err != nil {
		t.Fatalf("manager.New: %v", err)
	}
	r := &seenReconciler{Client: mgr.GetClient()}
	if err := ctrl.NewControllerManagedBy(mgr).
		For(&wallsv1.AddonWall{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("manager stopped with %v", err)
		}
	})

	// Nothing can reach an API server: the one reader that would dial
	// answers with the refusal instead.
	var probe wallsv1.AddonWall
	if err := mgr.GetAPIReader().Get(ctxT(t), client.ObjectKey{Namespace: "host1", Name: "x"}, &probe); !errors.Is(err, ErrNoAPIServer) && !strings.Contains(fmtErr(err), ErrNoAPIServer.Error()) {
		t.Fatalf("API reader: %v, want ErrNoAPIServer", err)
	}

	path := s.Dir() + "/walls.addonwall.dev/addonwalls/host1/notes.yaml"
	writeFile(t, path, "# the owner's notes add-on\nspec:\n  launcher:\n    command: node\n")
	waitForFile(t, path, "message: command node")

	start := time.Now()
	replaceInFile(t, path, "command: node", "command: deno")
	waitForFile(t, path, "message: command deno")
	t.Logf("hand edit -> reconciled status in the file: %s", time.Since(start))
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "# the owner's notes add-on") || !strings.Contains(string(data), "observedGeneration: 2") {
		t.Fatalf("file after reconcile:\n%s", data)
	}

	// The controller's own status write does not wake it again.
	time.Sleep(300 * time.Millisecond)
	n := r.reconciles.Load()
	time.Sleep(500 * time.Millisecond)
	if r.reconciles.Load() != n {
		t.Fatalf("reconciles went on without input: %d -> %d", n, r.reconciles.Load())
	}

	// A bad hand edit is reported, the last good version serves, and the
	// controller keeps working on other objects and on the fix.
	replaceInFile(t, path, "command: deno", "command: deno\n    transport: carrier-pigeon")
	eventually(t, "the bad edit to be reported", func() bool { return len(s.Problems()) == 1 })
	if p := s.Problems()[0]; p.Field != "spec.launcher.transport" || p.File != path {
		t.Fatalf("problem: %+v", p)
	}
	other := s.Dir() + "/walls.addonwall.dev/addonwalls/host1/other.yaml"
	writeFile(t, other, "spec:\n  launcher:\n    command: python3\n")
	waitForFile(t, other, "message: command python3")
	replaceInFile(t, path, "    transport: carrier-pigeon\n", "    transport: http\n")
	eventually(t, "the fix to be taken", func() bool { return len(s.Problems()) == 0 })
	waitForFile(t, path, "observedGeneration: 3")
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// waitForFile waits until path contains want (the controller's status,
// written back into the owner's file).
func waitForFile(t *testing.T, path, want string) {
	t.Helper()
	eventually(t, path+" to contain "+want, func() bool {
		data, err := os.ReadFile(path)
		return err == nil && strings.Contains(string(data), want)
	})
}

// TestManagerNewWithAPlainConfig checks that the config the manager is
// built with does not matter: with ManagerOptions, construction and
// start never use it.
func TestManagerNewWithAPlainConfig(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	mgr, err := manager.New(&rest.Config{Host: "file-store.invalid"}, s.ManagerOptions(manager.Options{Logger: testr.New(t)}))
	if err != nil {
		t.Fatalf("manager.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctxT(t)) {
		t.Fatal("cache did not sync")
	}
	var l wallsv1.AddonWallList
	if err := mgr.GetClient().List(ctxT(t), &l); err != nil {
		t.Fatalf("list through the manager's client: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
