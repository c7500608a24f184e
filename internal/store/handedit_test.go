package store

import (
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
)

// nextEvent waits for the next watch event, failing after 2 s.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(2 * time.Second):
		t.Fatal("no watch event within 2s")
	}
	return watch.Event{}
}

// noEvent asserts the watch stays quiet for a while.
func noEvent(t *testing.T, w watch.Interface, d time.Duration) {
	t.Helper()
	select {
	case ev := <-w.ResultChan():
		t.Fatalf("unexpected watch event %s %v", ev.Type, ev.Object)
	case <-time.After(d):
	}
}

func watchFrom(t *testing.T, s *Store, rv string) watch.Interface {
	t.Helper()
	w, err := s.Client().Watch(ctxT(t), &wallsv1.AddonWallList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

func replaceInFile(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not contain %q:\n%s", path, old, data)
	}
	writeFile(t, path, strings.Replace(string(data), old, new, 1))
}

func TestHandEditOfSpecIsAnUpdate(t *testing.T) {
	s := openStore(t, "")
	c := s.Client()
	ctx := ctxT(t)
	w := testWall("host1", "notes")
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	wt := watchFrom(t, s, w.ResourceVersion)
	path, _ := s.PathFor(w, "host1", "notes")

	// The store's own writes do not come back as hand edits.
	w.Spec.Linked = true
	if err := c.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, wt); ev.Type != watch.Modified || ev.Object.(*wallsv1.AddonWall).ResourceVersion != w.ResourceVersion {
		t.Fatalf("event for the client's update: %s", ev.Type)
	}
	noEvent(t, wt, 300*time.Millisecond)

	start := time.Now()
	replaceInFile(t, path, "command: node", "command: deno")
	ev := nextEvent(t, wt)
	got := ev.Object.(*wallsv1.AddonWall)
	if ev.Type != watch.Modified || got.Spec.Launcher.Command != "deno" {
		t.Fatalf("hand edit event: %s command %q", ev.Type, got.Spec.Launcher.Command)
	}
	if got.Generation != w.Generation+1 || got.ResourceVersion == w.ResourceVersion {
		t.Fatalf("hand edit of spec: generation %d (want %d), rv %s (was %s)", got.Generation, w.Generation+1, got.ResourceVersion, w.ResourceVersion)
	}
	t.Logf("hand edit reached the watch in %s", time.Since(start))
	if !got.Spec.Linked {
		t.Fatal("hand edit lost a field it did not touch")
	}

	// The old copy is now stale: the client's write conflicts.
	w.Spec.FirstParty = true
	if err := c.Update(ctx, w); !apierrors.IsConflict(err) {
		t.Fatalf("update from before the hand edit: %v, want Conflict", err)
	}

	// A comment-only edit changes nothing and sends nothing.
	replaceInFile(t, path, "command: deno", "command: deno # the owner's runtime")
	noEvent(t, wt, 300*time.Millisecond)
	var cur wallsv1.AddonWall
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil || cur.ResourceVersion != got.ResourceVersion {
		t.Fatalf("comment-only edit moved resourceVersion: %v %s -> %s", err, got.ResourceVersion, cur.ResourceVersion)
	}
	// Status written by hand is ignored: status belongs to the controller.
	replaceInFile(t, path, "spec:", "status:\n  mode: Walled\nspec:")
	noEvent(t, wt, 300*time.Millisecond)
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil || cur.Status.Mode != "" {
		t.Fatalf("hand-written status was taken: %v %q", err, cur.Status.Mode)
	}
}

func TestHandCreateAndDelete(t *testing.T) {
	s := openStore(t, "")
	c := s.Client()
	ctx := ctxT(t)
	wt := watchFrom(t, s, "0")
	path := s.Dir() + "/walls.addonwall.dev/addonwalls/host1/handmade.yaml"
	writeFile(t, path, `# written by the owner
apiVersion: walls.addonwall.dev/v1alpha1
kind: AddonWall
spec:
  launcher:
    command: ./run.sh
`)
	ev := nextEvent(t, wt)
	got := ev.Object.(*wallsv1.AddonWall)
	if ev.Type != watch.Added || got.Name != "handmade" || got.Namespace != "host1" || got.UID == "" || got.Generation != 1 {
		t.Fatalf("hand-made file: %s %s/%s uid %q generation %d", ev.Type, got.Namespace, got.Name, got.UID, got.Generation)
	}
	if got.Spec.Launcher.Transport != wallsv1.TransportStdio {
		t.Fatalf("schema default not applied: transport %q", got.Spec.Launcher.Transport)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, wt); ev.Type != watch.Deleted {
		t.Fatalf("removed file: %s, want DELETED", ev.Type)
	}
	var cur wallsv1.AddonWall
	if err := c.Get(ctx, client.ObjectKey{Namespace: "host1", Name: "handmade"}, &cur); !apierrors.IsNotFound(err) {
		t.Fatalf("after removing the file: %v, want NotFound", err)
	}
}

func TestRemovedFileWithFinalizerWaitsForIt(t *testing.T) {
	s := openStore(t, "")
	c := s.Client()
	ctx := ctxT(t)
	w := testWall("host1", "held")
	w.Finalizers = []string{"walls.addonwall.dev/sessions"}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	wt := watchFrom(t, s, w.ResourceVersion)
	path, _ := s.PathFor(w, "host1", "held")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, wt)
	got := ev.Object.(*wallsv1.AddonWall)
	if ev.Type != watch.Modified || got.DeletionTimestamp == nil {
		t.Fatalf("removed file with a finalizer: %s deletionTimestamp %v", ev.Type, got.DeletionTimestamp)
	}
	got.Finalizers = nil
	if err := c.Update(ctx, got); err != nil {
		t.Fatalf("removing the finalizer: %v", err)
	}
	if ev := nextEvent(t, wt); ev.Type != watch.Deleted {
		t.Fatalf("after the finalizer: %s, want DELETED", ev.Type)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the store wrote back a file the owner removed: %v", err)
	}
}

func TestBadHandEditsAreReportedAndTheLastGoodVersionServes(t *testing.T) {
	cases := []struct {
		name, old, new string
		field          string
		line           int
	}{
		{"yaml syntax error", "command: node", "command: [node", "", 0},
		{"bad enum", "command: node", "command: node\n    transport: carrier-pigeon", "spec.launcher.transport", 10},
		{"unknown field", "command: node", "command: node\n    transprt: http", "spec.launcher.transprt", 10},
		{"name not the file's", "name: good", "name: other", "metadata.name", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t, "")
			c := s.Client()
			ctx := ctxT(t)
			path := s.Dir() + "/walls.addonwall.dev/addonwalls/host1/good.yaml"
			writeFile(t, path, `apiVersion: walls.addonwall.dev/v1alpha1
kind: AddonWall
metadata:
  name: good
  namespace: host1
spec:
  installDir: /home/crow/.crow/bundles/good
  launcher:
    command: node
    args: [server.js]
`)
			var good wallsv1.AddonWall
			eventually(t, "the good file to load", func() bool {
				return c.Get(ctx, client.ObjectKey{Namespace: "host1", Name: "good"}, &good) == nil
			})
			wt := watchFrom(t, s, good.ResourceVersion)

			replaceInFile(t, path, tc.old, tc.new)
			var p Problem
			eventually(t, "the problem to be reported", func() bool {
				ps := s.Problems()
				if len(ps) == 1 {
					p = ps[0]
				}
				return len(ps) == 1
			})
			if p.File != path {
				t.Fatalf("problem names file %q, want %q", p.File, path)
			}
			if tc.field != "" && p.Field != tc.field {
				t.Fatalf("problem names field %q, want %q (%s)", p.Field, tc.field, p.Message)
			}
			if tc.field == "" && p.Line == 0 {
				t.Fatalf("syntax problem has no line: %+v", p)
			}
			if tc.line != 0 && p.Line != tc.line {
				t.Fatalf("problem at line %d, want %d", p.Line, tc.line)
			}
			t.Logf("reported: %s", p)

			// The last good version keeps serving, and nothing moved.
			noEvent(t, wt, 200*time.Millisecond)
			var cur wallsv1.AddonWall
			if err := c.Get(ctx, client.ObjectKeyFromObject(&good), &cur); err != nil || cur.ResourceVersion != good.ResourceVersion || cur.Spec.Launcher.Command != "node" {
				t.Fatalf("last good version not served: %v %+v", err, cur.Spec.Launcher)
			}
			// The controller's writes are refused, naming the file, rather
			// than overwriting the owner's edit.
			cur.Status.Mode = wallsv1.ModeWalled
			if err := c.Status().Update(ctx, &cur); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), path) {
				t.Fatalf("status write over a bad hand edit: %v, want Conflict naming the file", err)
			}
			data, _ := os.ReadFile(path)
			if !strings.Contains(string(data), tc.new) {
				t.Fatalf("the owner's bad edit was overwritten:\n%s", data)
			}
			// An Event on the object names the file and the field.
			eventually(t, "the warning event", func() bool {
				var evs corev1.EventList
				if err := c.List(ctx, &evs, client.InNamespace("host1"), client.MatchingFields{"involvedObject.name": "good", "reason": ReasonInvalidFile}); err != nil {
					t.Fatal(err)
				}
				return len(evs.Items) == 1 && strings.Contains(evs.Items[0].Message, path) &&
					strings.Contains(evs.Items[0].Message, tc.field) && evs.Items[0].Type == corev1.EventTypeWarning
			})

			// Fixing the file clears the problem and applies the edit.
			replaceInFile(t, path, tc.new, strings.Replace(tc.old, "node", "deno", 1))
			eventually(t, "the problem to clear", func() bool { return len(s.Problems()) == 0 })
			if tc.old == "command: node" {
				ev := nextEvent(t, wt)
				if got := ev.Object.(*wallsv1.AddonWall); got.Spec.Launcher.Command != "deno" {
					t.Fatalf("fixed file: command %q", got.Spec.Launcher.Command)
				}
			}
		})
	}
}

func TestMisplacedAndBadFilesAtOpen(t *testing.T) {
	dir := t.TempDir()
	good := dir + "/walls.addonwall.dev/addonwalls/host1/good.yaml"
	bad := dir + "/walls.addonwall.dev/addonwalls/host1/bad.yaml"
	misplaced := dir + "/walls.addonwall.dev/addonwalls/loose.yaml"
	writeFile(t, good, "spec:\n  launcher:\n    command: node\n")
	writeFile(t, bad, "spec:\n  launcher:\n    transport: carrier-pigeon\n")
	writeFile(t, misplaced, "spec:\n  launcher:\n    command: node\n")
	s := openStore(t, dir)
	var w wallsv1.AddonWall
	if err := s.Client().Get(ctxT(t), client.ObjectKey{Namespace: "host1", Name: "good"}, &w); err != nil {
		t.Fatalf("good file beside bad ones not loaded: %v", err)
	}
	ps := s.Problems()
	if len(ps) != 2 || ps[0].File != bad || ps[0].Field != "spec.launcher.transport" || ps[1].File != misplaced {
		t.Fatalf("problems at open: %+v", ps)
	}
}

// TestTruncateThenWriteIsNeverIngestedHalfWritten writes versions of a
// file the way `>` redirection and many editors do — truncate, write a
// part, pause, write the rest — and checks that every version the store
// ever serves is a complete one. Each version's last line repeats its
// number, so a half-written file (which often still parses) would show
// up as a mismatch.
func TestTruncateThenWriteIsNeverIngestedHalfWritten(t *testing.T) {
	s := openStore(t, "")
	path := s.Dir() + "/walls.addonwall.dev/addonwalls/host1/race.yaml"
	content := func(i int) string {
		args := make([]string, i+1)
		for j := range args {
			args[j] = fmt.Sprintf("%q", fmt.Sprintf("arg-%d-%d", i, j))
		}
		return fmt.Sprintf(`apiVersion: walls.addonwall.dev/v1alpha1
kind: AddonWall
metadata:
  labels:
    version: "%d"
spec:
  launcher:
    command: node
    args: [%s]
  installDir: /bundles/%d
`, i, strings.Join(args, ", "), i)
	}
	wt := watchFrom(t, s, "0")
	var mu sync.Mutex
	var seen []*wallsv1.AddonWall
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range wt.ResultChan() {
			if w, ok := ev.Object.(*wallsv1.AddonWall); ok {
				mu.Lock()
				seen = append(seen, w)
				last := w.Labels["version"]
				mu.Unlock()
				if last == "40" {
					return
				}
			}
		}
	}()

	if err := os.MkdirAll(s.Dir()+"/walls.addonwall.dev/addonwalls/host1", 0o700); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	for i := 1; i <= 40; i++ {
		data := []byte(content(i))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		cut := 20 + rng.Intn(len(data)-40)
		if _, err := f.Write(data[:cut]); err != nil {
			t.Fatal(err)
		}
		// Pauses longer than the store's settle time on purpose: the
		// open write descriptor must hold the store off on its own.
		time.Sleep(time.Duration(rng.Intn(60)) * time.Millisecond)
		if _, err := f.Write(data[cut:]); err != nil {
			t.Fatal(err)
		}
		f.Close()
		time.Sleep(time.Duration(rng.Intn(30)) * time.Millisecond)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the last version never reached the watch")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 {
		t.Fatalf("only %d versions seen; the test did not exercise updates", len(seen))
	}
	for _, w := range seen {
		v := w.Labels["version"]
		if w.Spec.InstallDir != "/bundles/"+v || len(w.Spec.Launcher.Args) != atoi(v)+1 {
			t.Fatalf("a half-written version was served: label %s installDir %q args %d", v, w.Spec.InstallDir, len(w.Spec.Launcher.Args))
		}
	}
	if len(s.Problems()) != 0 {
		t.Fatalf("half-written files were reported as problems: %v", s.Problems())
	}
	t.Logf("%d complete versions seen of 40 written", len(seen))
}

func atoi(s string) int {
	n := 0
	fmt.Sscanf(s, "%d", &n)
	return n
}

func TestStatusWriteKeepsTheOwnersFile(t *testing.T) {
	s := openStore(t, "")
	c := s.Client()
	ctx := ctxT(t)
	path := s.Dir() + "/walls.addonwall.dev/addonwalls/host1/kept.yaml"
	spec := `spec:
  # where the bundle lives
  installDir: /home/crow/.crow/bundles/kept
  launcher:
    args: [server.js, --port, "8080"] # flow style, kept
    command: node # runs on node 20
  ownerChoice: walled
`
	writeFile(t, path, "# My add-on, edited by hand.\napiVersion: walls.addonwall.dev/v1alpha1\nkind: AddonWall\n"+spec)
	var w wallsv1.AddonWall
	eventually(t, "the file to load", func() bool {
		return c.Get(ctx, client.ObjectKey{Namespace: "host1", Name: "kept"}, &w) == nil
	})
	w.Status.Mode = wallsv1.ModeWalled
	w.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Walled", Message: "walled", LastTransitionTime: metav1.Now()}}
	if err := c.Status().Update(ctx, &w); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	text := string(data)
	if !strings.Contains(text, "# My add-on, edited by hand.") || !strings.Contains(text, "# where the bundle lives") ||
		!strings.Contains(text, "# runs on node 20") || !strings.Contains(text, "# flow style, kept") {
		t.Fatalf("comments lost:\n%s", text)
	}
	if !strings.Contains(text, spec) {
		t.Fatalf("the owner's spec text changed:\n%s", text)
	}
	if !strings.Contains(text, "mode: Walled") || !strings.Contains(text, "resourceVersion:") {
		t.Fatalf("status or version not written:\n%s", text)
	}
	// The store's write is not read back as an edit, and a reopen reads
	// the same object.
	time.Sleep(200 * time.Millisecond)
	var cur wallsv1.AddonWall
	if err := c.Get(ctx, client.ObjectKeyFromObject(&w), &cur); err != nil || cur.ResourceVersion != w.ResourceVersion {
		t.Fatalf("status write echoed: %v %s -> %s", err, w.ResourceVersion, cur.ResourceVersion)
	}
	dir := s.Dir()
	s.Close()
	s2 := openStore(t, dir)
	if err := s2.Client().Get(ctx, client.ObjectKeyFromObject(&w), &cur); err != nil {
		t.Fatal(err)
	}
	if cur.ResourceVersion != w.ResourceVersion || cur.Status.Mode != wallsv1.ModeWalled || cur.Spec.Launcher.Transport != wallsv1.TransportStdio {
		t.Fatalf("reopened: rv %s (want %s) mode %q transport %q", cur.ResourceVersion, w.ResourceVersion, cur.Status.Mode, cur.Spec.Launcher.Transport)
	}
}

// TestOwnWritesNeverComeBackAsEdits writes one object as fast as the
// store allows while the file watch runs. The watch reads files the store
// is busy replacing; a read applied late would revert the object to an
// older version (and the next write would conflict). Every write must
// succeed and the versions seen must only go up.
func TestOwnWritesNeverComeBackAsEdits(t *testing.T) {
	s := openStore(t, "")
	c := s.Client()
	ctx := ctxT(t)
	w := testWall("host1", "busy")
	w.Labels = map[string]string{"n": "0"}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	wt := watchFrom(t, s, w.ResourceVersion)
	const writes = 300
	for i := 1; i <= writes; i++ {
		w.Labels["n"] = fmt.Sprint(i)
		if i%2 == 0 {
			w.Spec.Launcher.Args = []string{fmt.Sprint(i)}
		}
		if err := c.Update(ctx, w); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	last := 0
	for last < writes {
		ev := nextEvent(t, wt)
		n := atoi(ev.Object.(*wallsv1.AddonWall).Labels["n"])
		if n <= last {
			t.Fatalf("version %d seen after %d: an old read of the file was applied", n, last)
		}
		last = n
	}
	noEvent(t, wt, 300*time.Millisecond)
}

// TestSaveByRenameIsAnEditNotADelete saves the way editors that keep a
// backup do: rename the file away, write a new one, drop the backup. The
// moment with no file must not read as a delete (which would give the
// object a new UID and make controllers tear it down).
func TestSaveByRenameIsAnEditNotADelete(t *testing.T) {
	s := openStore(t, "")
	c := s.Client()
	ctx := ctxT(t)
	w := testWall("host1", "vim")
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	wt := watchFrom(t, s, w.ResourceVersion)
	path, _ := s.PathFor(w, "host1", "vim")
	data, _ := os.ReadFile(path)
	if err := os.Rename(path, path+"~"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	writeFile(t, path, strings.Replace(string(data), "command: node", "command: deno", 1))
	os.Remove(path + "~")
	ev := nextEvent(t, wt)
	got := ev.Object.(*wallsv1.AddonWall)
	if ev.Type != watch.Modified || got.UID != w.UID || got.Spec.Launcher.Command != "deno" {
		t.Fatalf("save by rename: %s uid %s (was %s) command %q", ev.Type, got.UID, w.UID, got.Spec.Launcher.Command)
	}
	// Positive control: a file that stays gone is a delete.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, wt); ev.Type != watch.Deleted {
		t.Fatalf("removed file: %s, want DELETED", ev.Type)
	}
}
