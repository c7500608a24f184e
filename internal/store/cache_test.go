package store

import (
	"context"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
)

func TestWatchResumesOrAnswersGone(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch(), WithHistory(5))
	c := s.Client()
	ctx := ctxT(t)
	var rvs []string
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		w := testWall("host1", n)
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		rvs = append(rvs, w.ResourceVersion)
	}
	// From a version still in the history: exactly the later changes.
	wt, err := c.Watch(ctx, &wallsv1.AddonWallList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rvs[5]}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"g", "h"} {
		ev := nextEvent(t, wt)
		if ev.Type != watch.Added || ev.Object.(*wallsv1.AddonWall).Name != want {
			t.Fatalf("replay: %s %s, want ADDED %s", ev.Type, ev.Object.(*wallsv1.AddonWall).Name, want)
		}
	}
	noEvent(t, wt, 100*time.Millisecond)
	wt.Stop()
	// From a version the history no longer holds: 410, so a reflector relists.
	_, err = c.Watch(ctx, &wallsv1.AddonWallList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rvs[0]}})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("watch from a too-old version: %v, want 410", err)
	}
}

func TestWatchListSendsInitialEventsAndBookmark(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	c := s.Client()
	ctx := ctxT(t)
	for _, n := range []string{"a", "b"} {
		if err := c.Create(ctx, testWall("host1", n)); err != nil {
			t.Fatal(err)
		}
	}
	lw := &listerWatcher{s: s, kind: s.kinds[wallsv1.GroupVersion.WithKind("AddonWall")]}
	wt, err := lw.WatchWithContext(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Stop()
	for range 2 {
		if ev := nextEvent(t, wt); ev.Type != watch.Added {
			t.Fatalf("initial event %s, want ADDED", ev.Type)
		}
	}
	ev := nextEvent(t, wt)
	m, _ := ev.Object.(metav1.Object)
	if ev.Type != watch.Bookmark || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
		t.Fatalf("after the initial events: %s %v, want the initial-events-end bookmark", ev.Type, m.GetAnnotations())
	}
	if err := c.Create(ctx, testWall("host1", "c")); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, wt); ev.Type != watch.Added || ev.Object.(*wallsv1.AddonWall).Name != "c" {
		t.Fatalf("after the bookmark: %s", ev.Type)
	}
}

func TestWatchSelectorTransitions(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	c := s.Client()
	ctx := ctxT(t)
	w := testWall("host1", "a")
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	wt, err := c.Watch(ctx, &wallsv1.AddonWallList{}, client.MatchingLabels{"tier": "x"}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: w.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Stop()
	w.Labels = map[string]string{"tier": "x"}
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, wt); ev.Type != watch.Added {
		t.Fatalf("object starts matching: %s, want ADDED", ev.Type)
	}
	w.Labels = map[string]string{"tier": "y"}
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, wt); ev.Type != watch.Deleted {
		t.Fatalf("object stops matching: %s, want DELETED", ev.Type)
	}
}

// recordingHandler keeps what an informer told it.
type recordingHandler struct {
	mu     sync.Mutex
	events []string
}

func (h *recordingHandler) add(kind string, obj any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch o := obj.(type) {
	case *wallsv1.AddonWall:
		h.events = append(h.events, kind+" "+o.Name+" "+o.Spec.Launcher.Command)
	case *unstructured.Unstructured:
		h.events = append(h.events, kind+" "+o.GetName()+" unstructured")
	case toolscache.DeletedFinalStateUnknown:
		h.events = append(h.events, kind+" "+o.Key)
	}
}

func (h *recordingHandler) has(e string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, got := range h.events {
		if got == e {
			return true
		}
	}
	return false
}

func (h *recordingHandler) funcs() toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.add("add", obj) },
		UpdateFunc: func(_, obj any) { h.add("update", obj) },
		DeleteFunc: func(obj any) { h.add("delete", obj) },
	}
}

func startCache(t *testing.T, s *Store, opts cache.Options) cache.Cache {
	t.Helper()
	ca, err := s.NewCache(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctxT(t)) {
		t.Fatal("cache did not sync")
	}
	return ca
}

func TestInformerSeesHandEdits(t *testing.T) {
	s := openStore(t, "")
	c := s.Client()
	ctx := ctxT(t)
	w := testWall("host1", "a")
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	ca := startCache(t, s, cache.Options{})
	inf, err := ca.GetInformer(ctx, &wallsv1.AddonWall{})
	if err != nil {
		t.Fatal(err)
	}
	h := &recordingHandler{}
	if _, err := inf.AddEventHandler(h.funcs()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the initial add", func() bool { return h.has("add a node") })

	path, _ := s.PathFor(w, "host1", "a")
	start := time.Now()
	replaceInFile(t, path, "command: node", "command: bun")
	eventually(t, "the hand edit to reach the informer", func() bool { return h.has("update a bun") })
	t.Logf("hand edit reached the informer in %s", time.Since(start))
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the delete to reach the informer", func() bool { return h.has("delete a bun") })

	// An unstructured informer is a separate one with unstructured items.
	uw := &unstructured.Unstructured{}
	uw.SetGroupVersionKind(wallsv1.GroupVersion.WithKind("AddonWall"))
	uinf, err := ca.GetInformer(ctx, uw)
	if err != nil {
		t.Fatal(err)
	}
	hu := &recordingHandler{}
	if _, err := uinf.AddEventHandler(hu.funcs()); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, testWall("host1", "b")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the unstructured informer", func() bool { return hu.has("add b unstructured") })
}

func TestCacheReads(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	c := s.Client()
	ctx := ctxT(t)
	for _, nn := range [][3]string{{"host1", "a", "node"}, {"host1", "b", "deno"}, {"host2", "c", "node"}} {
		w := testWall(nn[0], nn[1])
		w.Spec.Launcher.Command = nn[2]
		w.Labels = map[string]string{"cmd": nn[2]}
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	h := &wallsv1.WallHost{ObjectMeta: metav1.ObjectMeta{Name: "host1"}}
	if err := c.Create(ctx, h); err != nil {
		t.Fatal(err)
	}

	ca, err := s.NewCache(nil, cache.Options{DefaultNamespaces: map[string]cache.Config{"host1": {}}})
	if err != nil {
		t.Fatal(err)
	}
	// Reads before Start say so, as controller-runtime's cache does.
	var w wallsv1.AddonWall
	if err := ca.Get(ctx, client.ObjectKey{Namespace: "host1", Name: "a"}, &w); err == nil {
		t.Fatal("read before start succeeded")
	}
	if err := ca.IndexField(ctx, &wallsv1.AddonWall{}, "spec.launcher.command", func(o client.Object) []string {
		return []string{o.(*wallsv1.AddonWall).Spec.Launcher.Command}
	}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = ca.Start(cctx) }()
	if !ca.WaitForCacheSync(ctx) {
		t.Fatal("no sync")
	}

	if err := ca.Get(ctx, client.ObjectKey{Namespace: "host1", Name: "a"}, &w); err != nil {
		t.Fatalf("cache get: %v", err)
	}
	if w.GetObjectKind().GroupVersionKind().Kind != "AddonWall" {
		t.Fatalf("cache get: GVK %v, want set as controller-runtime's cache reader does", w.GetObjectKind().GroupVersionKind())
	}
	if err := ca.Get(ctx, client.ObjectKey{Namespace: "host2", Name: "c"}, &w); err == nil {
		t.Fatal("cache restricted to host1 served host2")
	}
	if err := ca.Get(ctx, client.ObjectKey{Namespace: "host1", Name: "zz"}, &w); !apierrors.IsNotFound(err) {
		t.Fatalf("missing object: %v, want NotFound", err)
	}
	// Cluster-scoped kinds ignore the namespace restriction.
	var gotHost wallsv1.WallHost
	if err := ca.Get(ctx, client.ObjectKey{Name: "host1"}, &gotHost); err != nil {
		t.Fatalf("cluster-scoped get: %v", err)
	}

	names := func(opts ...client.ListOption) []string {
		t.Helper()
		var l wallsv1.AddonWallList
		if err := ca.List(ctx, &l, opts...); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, i := range l.Items {
			out = append(out, i.Name)
		}
		sort.Strings(out)
		return out
	}
	cases := []struct {
		name string
		opts []client.ListOption
		want string
	}{
		{"all cached", nil, "[a b]"},
		{"namespace", []client.ListOption{client.InNamespace("host1")}, "[a b]"},
		{"label", []client.ListOption{client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(labels.Set{"cmd": "deno"})}}, "[b]"},
		{"field index", []client.ListOption{client.MatchingFields{"spec.launcher.command": "node"}}, "[a]"},
		{"field index in namespace", []client.ListOption{client.InNamespace("host1"), client.MatchingFields{"spec.launcher.command": "deno"}}, "[b]"},
		{"metadata.name without an index", []client.ListOption{client.MatchingFields{"metadata.name": "b"}}, "[b]"},
	}
	for _, tc := range cases {
		if got := names(tc.opts...); fmtList(got) != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, got, tc.want)
		}
	}
	var l wallsv1.AddonWallList
	if err := ca.List(ctx, &l, client.MatchingFields{"spec.installDir": "x"}); err == nil {
		t.Error("field selector without an index was served")
	}

	// A write reaches the cache.
	b := &wallsv1.AddonWall{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "host1", Name: "b"}, b); err != nil {
		t.Fatal(err)
	}
	b.Spec.Launcher.Command = "node"
	if err := c.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the update in the cache index", func() bool {
		return fmtList(names(client.MatchingFields{"spec.launcher.command": "node"})) == "[a b]"
	})
}

func fmtList(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}

func TestManagerClientReadsThroughTheCache(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	ca := startCache(t, s, cache.Options{})
	cl, err := s.NewClient(nil, client.Options{Cache: &client.CacheOptions{Reader: ca}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	w := testWall("host1", "a")
	if err := cl.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	// Reads are eventually consistent, as against an API server.
	var got wallsv1.AddonWall
	eventually(t, "the created object in the cache", func() bool {
		return cl.Get(ctx, client.ObjectKeyFromObject(w), &got) == nil
	})
	if got.GetObjectKind().GroupVersionKind().Empty() {
		t.Fatal("a cached read carries no GVK; controller-runtime's cache sets it")
	}
}
