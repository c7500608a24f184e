package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
)

func TestCreateWritesOneFilePerObject(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	c := s.Client()
	ctx := ctxT(t)

	w := testWall("host1", "notes")
	w.Status.Mode = wallsv1.ModeWalled // ignored: status is a subresource
	if err := c.Create(ctx, w); err != nil {
		t.Fatalf("create: %v", err)
	}
	if w.UID == "" || w.ResourceVersion == "" || w.Generation != 1 || w.CreationTimestamp.IsZero() {
		t.Fatalf("create did not set uid/resourceVersion/generation/creationTimestamp: %+v", w.ObjectMeta)
	}
	if w.Status.Mode != "" {
		t.Fatalf("create kept status %q; status is a subresource", w.Status.Mode)
	}
	if !w.GetObjectKind().GroupVersionKind().Empty() {
		t.Fatalf("typed object came back with TypeMeta %v; the real client clears it", w.GetObjectKind().GroupVersionKind())
	}

	path := filepath.Join(s.Dir(), "walls.addonwall.dev", "addonwalls", "host1", "notes.yaml")
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("object file: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("file mode %v, want 0600", st.Mode().Perm())
	}
	for _, d := range []string{filepath.Dir(path), filepath.Dir(filepath.Dir(path)), s.Dir()} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("folder %s: %v %v, want 0700", d, st.Mode().Perm(), err)
		}
	}
	data, _ := os.ReadFile(path)
	for _, want := range []string{"apiVersion: walls.addonwall.dev/v1alpha1", "kind: AddonWall", "name: notes", "command: node", "transport: stdio"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("file lacks %q:\n%s", want, data)
		}
	}
	if strings.Contains(string(data), "null") || strings.Contains(string(data), "{}") {
		t.Errorf("file carries empty values:\n%s", data)
	}

	// Cluster-scoped kinds have no namespace level; the core group is "core".
	h := &wallsv1.WallHost{ObjectMeta: metav1.ObjectMeta{Name: "host1", Namespace: "ignored"}}
	if err := c.Create(ctx, h); err != nil {
		t.Fatalf("create host: %v", err)
	}
	if h.Namespace != "" {
		t.Fatalf("cluster-scoped object kept namespace %q", h.Namespace)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "walls.addonwall.dev", "wallhosts", "host1.yaml")); err != nil {
		t.Fatalf("host file: %v", err)
	}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "host1", Name: "e1"}, Reason: "Test", InvolvedObject: corev1.ObjectReference{Kind: "AddonWall", Name: "notes"}}
	if err := c.Create(ctx, ev); err != nil {
		t.Fatalf("create event: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir(), "core", "events", "host1", "e1.yaml")); err != nil {
		t.Fatalf("event file: %v", err)
	}
}

func TestAPIErrors(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	c := s.Client()
	ctx := ctxT(t)

	if err := c.Create(ctx, testWall("host1", "a")); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, testWall("host1", "a")); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: %v, want AlreadyExists", err)
	}
	var got wallsv1.AddonWall
	if err := c.Get(ctx, types.NamespacedName{Namespace: "host1", Name: "missing"}, &got); !apierrors.IsNotFound(err) {
		t.Fatalf("get missing: %v, want NotFound", err)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "host1", Name: "a"}, &got); err != nil {
		t.Fatalf("get (positive control): %v", err)
	}
	if err := c.Update(ctx, testWall("host1", "missing")); !apierrors.IsNotFound(err) {
		t.Fatalf("update missing: %v, want NotFound", err)
	}
	if err := c.Delete(ctx, testWall("host1", "missing")); !apierrors.IsNotFound(err) {
		t.Fatalf("delete missing: %v, want NotFound", err)
	}
	// An update of a custom resource must carry a resourceVersion.
	noRV := got.DeepCopy()
	noRV.ResourceVersion = ""
	if err := c.Update(ctx, noRV); !apierrors.IsInvalid(err) {
		t.Fatalf("update without resourceVersion: %v, want Invalid", err)
	}
	// A kind the store does not serve is a no-match error, as from a RESTMapper.
	if err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "y"}}); err == nil || !strings.Contains(err.Error(), "no matches for kind") {
		t.Fatalf("create of an unserved kind: %v", err)
	}
	if err := c.Apply(ctx, nil); err == nil || !strings.Contains(err.Error(), "not supported by the file store") {
		t.Fatalf("apply: %v", err)
	}

	if gvk, err := c.GroupVersionKindFor(&wallsv1.WallHost{}); err != nil || gvk != wallsv1.GroupVersion.WithKind("WallHost") {
		t.Fatalf("GroupVersionKindFor: %v %v", gvk, err)
	}
	for obj, want := range map[client.Object]bool{&wallsv1.AddonWall{}: true, &wallsv1.WallHost{}: false, &corev1.Event{}: true} {
		if got, err := c.IsObjectNamespaced(obj); err != nil || got != want {
			t.Fatalf("IsObjectNamespaced(%T) = %v, %v; want %v", obj, got, err, want)
		}
	}
	m, err := c.RESTMapper().RESTMapping(wallsv1.GroupVersion.WithKind("AddonWall").GroupKind())
	if err != nil || m.Resource.Resource != "addonwalls" {
		t.Fatalf("RESTMapping: %v %v", m, err)
	}
	var viaStatus wallsv1.AddonWall
	if err := c.SubResource("status").Get(ctx, &got, &viaStatus); err != nil || viaStatus.Name != "a" {
		t.Fatalf("status subresource get: %v %q", err, viaStatus.Name)
	}
	if err := c.SubResource("scale").Update(ctx, &got); !apierrors.IsNotFound(err) {
		t.Fatalf("unknown subresource: %v, want NotFound", err)
	}
}

func TestConflictOnStaleResourceVersion(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	c := s.Client()
	ctx := ctxT(t)
	w := testWall("host1", "a")
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	stale := w.DeepCopy()
	w.Spec.Linked = true
	if err := c.Update(ctx, w); err != nil {
		t.Fatalf("update with the current resourceVersion (positive control): %v", err)
	}
	stale.Spec.FirstParty = true
	if err := c.Update(ctx, stale); !apierrors.IsConflict(err) {
		t.Fatalf("update with a stale resourceVersion: %v, want Conflict", err)
	}
	if err := c.Status().Update(ctx, stale); !apierrors.IsConflict(err) {
		t.Fatalf("status update with a stale resourceVersion: %v, want Conflict", err)
	}
	base := stale.DeepCopy()
	stale.Spec.OwnerChoice = wallsv1.ChoiceWalled
	if err := c.Patch(ctx, stale, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); !apierrors.IsConflict(err) {
		t.Fatalf("optimistic-lock patch from a stale object: %v, want Conflict", err)
	}
	// The same patch without the lock applies (last writer wins).
	if err := c.Patch(ctx, stale, client.MergeFrom(base)); err != nil {
		t.Fatalf("merge patch without lock: %v", err)
	}
	if !stale.Spec.Linked || stale.Spec.OwnerChoice != wallsv1.ChoiceWalled {
		t.Fatalf("merge patch result lost a field: %+v", stale.Spec)
	}
	if err := c.Delete(ctx, w, client.Preconditions{ResourceVersion: &w.ResourceVersion}); !apierrors.IsConflict(err) {
		t.Fatalf("delete with a stale resourceVersion precondition: %v, want Conflict", err)
	}
}

func TestGenerationAndStatusSubresource(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	c := s.Client()
	ctx := ctxT(t)
	w := testWall("host1", "a")
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}

	// A metadata-only change moves resourceVersion, not generation.
	rv0 := w.ResourceVersion
	w.Labels = map[string]string{"tier": "x"}
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if w.Generation != 1 || w.ResourceVersion == rv0 {
		t.Fatalf("label change: generation %d (want 1), resourceVersion %s (want != %s)", w.Generation, w.ResourceVersion, rv0)
	}

	// A spec change bumps generation.
	w.Spec.Launcher.Args = append(w.Spec.Launcher.Args, "--verbose")
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if w.Generation != 2 {
		t.Fatalf("spec change: generation %d, want 2", w.Generation)
	}

	// A main write cannot change status.
	w.Status.Mode = wallsv1.ModeOff
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if w.Status.Mode != "" {
		t.Fatalf("main update wrote status %q", w.Status.Mode)
	}

	// A status write changes status only: the spec change riding along
	// is dropped, and generation stays.
	w.Status.Mode = wallsv1.ModeWalled
	w.Status.ObservedGeneration = w.Generation
	w.Spec.Linked = true
	if err := c.Status().Update(ctx, w); err != nil {
		t.Fatalf("status update: %v", err)
	}
	var got wallsv1.AddonWall
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Mode != wallsv1.ModeWalled || got.Spec.Linked || got.Generation != 2 {
		t.Fatalf("after status update: mode %q linked %v generation %d; want Walled, false, 2", got.Status.Mode, got.Spec.Linked, got.Generation)
	}

	// Status patch through SubResource("status") as well.
	base := got.DeepCopy()
	got.Status.Reason = "Walled"
	if err := c.SubResource("status").Patch(ctx, &got, client.MergeFrom(base)); err != nil {
		t.Fatalf("status patch: %v", err)
	}
	if got.Status.Reason != "Walled" || got.Generation != 2 {
		t.Fatalf("status patch: %+v", got.Status)
	}
	// Events have no status subresource.
	if err := c.Status().Update(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "host1", Name: "x"}}); !apierrors.IsNotFound(err) {
		t.Fatalf("status update of an event: %v, want NotFound", err)
	}
}

func TestNoOpWriteKeepsResourceVersionAndFile(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	c := s.Client()
	ctx := ctxT(t)
	w := testWall("host1", "a")
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	wt, err := c.Watch(ctx, &wallsv1.AddonWallList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: w.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Stop()
	path, _ := s.PathFor(w, w.Namespace, w.Name)
	before, _ := os.ReadFile(path)
	st0, _ := os.Stat(path)

	rv := w.ResourceVersion
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := c.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	base := w.DeepCopy()
	if err := c.Patch(ctx, w, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	if w.ResourceVersion != rv {
		t.Fatalf("no-op writes moved resourceVersion %s -> %s", rv, w.ResourceVersion)
	}
	after, _ := os.ReadFile(path)
	st1, _ := os.Stat(path)
	if string(before) != string(after) || !st0.ModTime().Equal(st1.ModTime()) {
		t.Fatalf("no-op writes rewrote the file")
	}
	// Positive control: a real change is the first event the watch sees.
	w.Spec.Linked = true
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	ev := <-wt.ResultChan()
	got := ev.Object.(*wallsv1.AddonWall)
	if got.ResourceVersion != w.ResourceVersion || !got.Spec.Linked {
		t.Fatalf("first watch event after no-op writes is %s rv %s; want the real change rv %s", ev.Type, got.ResourceVersion, w.ResourceVersion)
	}
}

func TestResourceVersionSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, newScheme(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	w := testWall("host1", "a")
	if err := s.Client().Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s2 := openStore(t, dir)
	var got wallsv1.AddonWall
	if err := s2.Client().Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != w.ResourceVersion || got.UID != w.UID {
		t.Fatalf("after reopen: rv %s uid %s, want rv %s uid %s", got.ResourceVersion, got.UID, w.ResourceVersion, w.UID)
	}
	w2 := testWall("host1", "b")
	if err := s2.Client().Create(ctx, w2); err != nil {
		t.Fatal(err)
	}
	old, _ := parseRV(w.ResourceVersion)
	next, _ := parseRV(w2.ResourceVersion)
	if next <= old {
		t.Fatalf("resourceVersion went back after reopen: %d then %d", old, next)
	}
	// The stale copy still conflicts after the restart.
	stale := w.DeepCopy()
	got.Spec.Linked = true
	if err := s2.Client().Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if err := s2.Client().Update(ctx, stale); !apierrors.IsConflict(err) {
		t.Fatalf("stale update after reopen: %v, want Conflict", err)
	}
}

func TestSecondWriterProcessIsRefused(t *testing.T) {
	dir := t.TempDir()
	openStore(t, dir)
	if _, err := Open(dir, newScheme(t)); err == nil || !strings.Contains(err.Error(), "in use by another") {
		t.Fatalf("second open for writing: %v, want in-use error", err)
	}
	// A read-only open beside the writer is fine, and refuses writes.
	ro := openStore(t, dir, ReadOnly(), WithoutFileWatch())
	if err := ro.Client().Create(ctxT(t), testWall("host1", "a")); err == nil {
		t.Fatal("read-only store accepted a write")
	}
}

func TestPatchTypes(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	c := s.Client()
	ctx := ctxT(t)
	w := testWall("host1", "a")
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, w, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"add","path":"/spec/linked","value":true}]`))); err != nil {
		t.Fatalf("json patch: %v", err)
	}
	if !w.Spec.Linked || w.Generation != 2 {
		t.Fatalf("json patch result: linked %v generation %d", w.Spec.Linked, w.Generation)
	}
	if err := c.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`))); err != nil {
		t.Fatalf("merge patch: %v", err)
	}
	if w.Labels["a"] != "b" {
		t.Fatalf("merge patch result: %v", w.Labels)
	}
	err := c.Patch(ctx, w, client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"linked":false}}`)))
	if !apierrors.IsUnsupportedMediaType(err) {
		t.Fatalf("strategic merge patch on a custom resource: %v, want 415", err)
	}
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "host1", Name: "e"}, Reason: "R", Count: 1}
	if err := c.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, ev, client.RawPatch(types.StrategicMergePatchType, []byte(`{"count":2,"message":"again"}`))); err != nil {
		t.Fatalf("strategic merge patch on an event: %v", err)
	}
	if ev.Count != 2 || ev.Message != "again" {
		t.Fatalf("strategic patch result: %+v", ev)
	}
	if err := c.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"name":"other"}}`))); !apierrors.IsInvalid(err) {
		t.Fatalf("patch renaming the object: %v, want Invalid", err)
	}
}

func TestFinalizersHoldDeletion(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	c := s.Client()
	ctx := ctxT(t)
	w := testWall("host1", "a")
	w.Finalizers = []string{"walls.addonwall.dev/sessions"}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	var got wallsv1.AddonWall
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatalf("object held by a finalizer is gone: %v", err)
	}
	if got.DeletionTimestamp == nil {
		t.Fatal("delete with a finalizer did not set deletionTimestamp")
	}
	if got.Generation != 2 {
		t.Fatalf("marking for deletion: generation %d, want 2", got.Generation)
	}
	path, _ := s.PathFor(w, "host1", "a")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("file of an object being deleted: %v", err)
	}
	added := got.DeepCopy()
	added.Finalizers = append(added.Finalizers, "example.com/more")
	if err := c.Update(ctx, added); !apierrors.IsInvalid(err) {
		t.Fatalf("adding a finalizer while deleting: %v, want Invalid", err)
	}
	got.Finalizers = nil
	if err := c.Update(ctx, &got); err != nil {
		t.Fatalf("removing the last finalizer: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &got); !apierrors.IsNotFound(err) {
		t.Fatalf("after the last finalizer: %v, want NotFound", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("file still there after the delete: %v", err)
	}
}

func TestListSelectors(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	c := s.Client()
	ctx := ctxT(t)
	for _, nn := range [][3]string{{"host1", "a", "x"}, {"host1", "b", "y"}, {"host2", "a", "x"}} {
		w := testWall(nn[0], nn[1])
		w.Labels = map[string]string{"tier": nn[2]}
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	count := func(opts ...client.ListOption) int {
		t.Helper()
		var l wallsv1.AddonWallList
		if err := c.List(ctx, &l, opts...); err != nil {
			t.Fatal(err)
		}
		if l.ResourceVersion == "" {
			t.Fatal("list has no resourceVersion")
		}
		return len(l.Items)
	}
	cases := []struct {
		name string
		opts []client.ListOption
		want int
	}{
		{"all", nil, 3},
		{"namespace", []client.ListOption{client.InNamespace("host1")}, 2},
		{"label", []client.ListOption{client.MatchingLabels{"tier": "x"}}, 2},
		{"namespace+label", []client.ListOption{client.InNamespace("host1"), client.MatchingLabels{"tier": "x"}}, 1},
		{"field name", []client.ListOption{client.MatchingFields{"metadata.name": "a"}}, 2},
		{"field namespace", []client.ListOption{client.MatchingFields{"metadata.namespace": "host2"}}, 1},
		{"label selector", []client.ListOption{client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(labels.Set{"tier": "y"})}}, 1},
		{"limit", []client.ListOption{client.Limit(2)}, 2},
	}
	for _, tc := range cases {
		if got := count(tc.opts...); got != tc.want {
			t.Errorf("%s: %d items, want %d", tc.name, got, tc.want)
		}
	}
	var l wallsv1.AddonWallList
	if err := c.List(ctx, &l, client.MatchingFields{"spec.installDir": "x"}); !apierrors.IsBadRequest(err) {
		t.Errorf("field selector on an unsupported field: %v, want BadRequest", err)
	}
	u := &unstructured.UnstructuredList{}
	u.SetAPIVersion("walls.addonwall.dev/v1alpha1")
	u.SetKind("AddonWallList")
	if err := c.List(ctx, u, client.InNamespace("host2")); err != nil || len(u.Items) != 1 || u.Items[0].GetKind() != "AddonWall" {
		t.Fatalf("unstructured list: %v %d", err, len(u.Items))
	}
	if err := c.DeleteAllOf(ctx, &wallsv1.AddonWall{}, client.InNamespace("host1"), client.MatchingLabels{"tier": "x"}); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != 2 {
		t.Fatalf("after DeleteAllOf: %d items, want 2", got)
	}
}

func TestValidationMatchesTheCRD(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	c := s.Client()
	ctx := ctxT(t)
	cases := []struct {
		name  string
		edit  func(w *wallsv1.AddonWall)
		field string // "" means valid
	}{
		{"valid (positive control)", func(w *wallsv1.AddonWall) {
			w.Spec.Launcher.Transport = wallsv1.TransportHTTP
			w.Spec.Launcher.CommandSHA256 = strings.Repeat("a", 64)
			w.Spec.Profile.ComposePorts = []wallsv1.ComposePort{{Address: "127.0.0.1", Port: 8080, Protocol: "tcp"}}
			q := resource.MustParse("512Mi")
			w.Spec.Limits.Memory = &q
		}, ""},
		{"bad enum", func(w *wallsv1.AddonWall) { w.Spec.Launcher.Transport = "carrier-pigeon" }, "spec.launcher.transport"},
		{"bad pattern", func(w *wallsv1.AddonWall) { w.Spec.Launcher.CommandSHA256 = "not-a-digest" }, "spec.launcher.commandSHA256"},
		{"bad item pattern", func(w *wallsv1.AddonWall) { w.Spec.Launcher.EnvKeys = []string{"OK", "1BAD"} }, "spec.launcher.envKeys[1]"},
		{"out of range", func(w *wallsv1.AddonWall) {
			w.Spec.Profile.ComposePorts = []wallsv1.ComposePort{{Address: "127.0.0.1", Port: 70000, Protocol: "tcp"}}
		}, "spec.profile.composePorts[0].port"},
		{"bad name", func(w *wallsv1.AddonWall) { w.Name = "Not_A_Name" }, "metadata.name"},
		{"too many args", func(w *wallsv1.AddonWall) { w.Spec.Launcher.Args = make([]string, 65) }, "spec.launcher.args"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := testWall("host1", "w"+string(rune('a'+i)))
			tc.edit(w)
			err := c.Create(ctx, w)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("valid object refused: %v", err)
				}
				return
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want Invalid", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error does not name %s: %v", tc.field, err)
			}
		})
	}

	// A typed object always carries its required fields; an unstructured
	// one (or a hand edit) can leave one out.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "walls.addonwall.dev/v1alpha1", "kind": "AddonWall",
		"metadata": map[string]any{"namespace": "host1", "name": "missing-required"},
		"spec": map[string]any{
			"launcher":     map[string]any{"command": "node"},
			"inputProblem": map[string]any{"file": "mcp-addons.json"},
		},
	}}
	if err := c.Create(ctx, u); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.inputProblem.message") {
		t.Errorf("missing required field: %v, want Invalid naming spec.inputProblem.message", err)
	}
	unstructured.SetNestedField(u.Object, "bad file", "spec", "inputProblem", "message")
	if err := c.Create(ctx, u); err != nil {
		t.Errorf("the same object with the field (positive control): %v", err)
	}
	unknown := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(u.Object)}
	unknown.SetName("unknown-field")
	unknown.SetResourceVersion("")
	unstructured.SetNestedField(unknown.Object, "http", "spec", "launcher", "transprt")
	if err := c.Create(ctx, unknown); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.launcher.transprt") {
		t.Errorf("unknown field: %v, want Invalid naming spec.launcher.transprt", err)
	}

	// Condition reasons follow metav1.Condition's pattern, on status writes.
	w := testWall("host1", "cond")
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	good := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Walled", Message: "ok", LastTransitionTime: metav1.Now()}
	w.Status.Conditions = []metav1.Condition{good}
	if err := c.Status().Update(ctx, w); err != nil {
		t.Fatalf("valid condition refused: %v", err)
	}
	for _, reason := range []string{"", "has space", "9Start", "Trailing,"} {
		bad := w.DeepCopy()
		bad.Status.Conditions[0].Reason = reason
		err := c.Status().Update(ctx, bad)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.conditions[0].reason") {
			t.Errorf("condition reason %q: %v, want Invalid naming status.conditions[0].reason", reason, err)
		}
	}
	dup := w.DeepCopy()
	dup.Status.Conditions = append(dup.Status.Conditions, good)
	if err := c.Status().Update(ctx, dup); !apierrors.IsInvalid(err) {
		t.Errorf("duplicate condition type: %v, want Invalid (listType=map)", err)
	}
}

func TestReadOnlyViewFollowsTheWriter(t *testing.T) {
	dir := t.TempDir()
	writer := openStore(t, dir)
	reader := openStore(t, dir, ReadOnly())
	ctx := ctxT(t)
	w := testWall("host1", "a")
	if err := writer.Client().Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	w.Status.Mode = wallsv1.ModeWalled
	if err := writer.Client().Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	// The reader takes the writer's files whole, status included.
	eventually(t, "the reader to see the status", func() bool {
		var got wallsv1.AddonWall
		return reader.Client().Get(ctx, client.ObjectKeyFromObject(w), &got) == nil && got.Status.Mode == wallsv1.ModeWalled
	})
	if err := writer.Client().Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reader to see the delete", func() bool {
		var got wallsv1.AddonWall
		return apierrors.IsNotFound(reader.Client().Get(ctx, client.ObjectKeyFromObject(w), &got))
	})
	if len(reader.Problems()) != 0 || len(writer.Problems()) != 0 {
		t.Fatalf("problems: %v %v", reader.Problems(), writer.Problems())
	}
}

func TestCreateAndUpdatePreconditions(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch())
	c := s.Client()
	ctx := ctxT(t)
	w := testWall("host1", "a")
	w.ResourceVersion = "5"
	if err := c.Create(ctx, w); !apierrors.IsBadRequest(err) {
		t.Fatalf("create with a resourceVersion: %v, want BadRequest", err)
	}
	w.ResourceVersion = ""
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	// Deleted and created again: the old copy's UID no longer matches.
	old := w.DeepCopy()
	if err := c.Delete(ctx, w); err != nil {
		t.Fatal(err)
	}
	again := testWall("host1", "a")
	if err := c.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	old.ResourceVersion = again.ResourceVersion
	if err := c.Update(ctx, old); !apierrors.IsConflict(err) {
		t.Fatalf("update of a recreated object with the old UID: %v, want Conflict", err)
	}
	if err := c.Update(ctx, again); err != nil {
		t.Fatalf("positive control: %v", err)
	}
}
