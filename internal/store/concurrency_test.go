package store

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
)

// TestConcurrentWritersLoseNoUpdate runs writers that each increment a
// counter k times with read-modify-write and retry-on-conflict. Every
// increment must land: the final count is writers×k, and the conflicts
// the writers met prove they really raced.
func TestConcurrentWritersLoseNoUpdate(t *testing.T) {
	s := openStore(t, "")
	c := s.Client()
	ctx := ctxT(t)
	w := testWall("host1", "counter")
	w.Annotations = map[string]string{"count": "0"}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	const writers, k = 8, 25
	var conflicts sync.Map
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range k {
				err := retry.OnError(wait.Backoff{Steps: 1000, Duration: time.Millisecond, Factor: 1, Jitter: 4}, func(err error) bool {
					if apierrors.IsConflict(err) {
						n, _ := conflicts.LoadOrStore(i, new(int))
						*n.(*int)++
						return true
					}
					return false
				}, func() error {
					var cur wallsv1.AddonWall
					if err := c.Get(ctx, client.ObjectKeyFromObject(w), &cur); err != nil {
						return err
					}
					n, _ := strconv.Atoi(cur.Annotations["count"])
					cur.Annotations["count"] = strconv.Itoa(n + 1)
					return c.Update(ctx, &cur)
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("writer gave up: %v", err)
	}
	var got wallsv1.AddonWall
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations["count"] != strconv.Itoa(writers*k) {
		t.Fatalf("count %s, want %d: updates were lost", got.Annotations["count"], writers*k)
	}
	total := 0
	conflicts.Range(func(_, v any) bool { total += *v.(*int); return true })
	if total == 0 {
		t.Fatal("no writer ever met a conflict; the test did not race")
	}
	t.Logf("%d updates, %d conflicts retried", writers*k, total)

	// The file holds the final count too.
	dir := s.Dir()
	s.Close()
	s2 := openStore(t, dir, ReadOnly(), WithoutFileWatch())
	if err := s2.Client().Get(ctx, client.ObjectKeyFromObject(w), &got); err != nil || got.Annotations["count"] != strconv.Itoa(writers*k) {
		t.Fatalf("after reopen: %v count %s", err, got.Annotations["count"])
	}
}

const crashChildEnv = "ADDONWALL_STORE_CRASH_CHILD"

// crashObjects are the objects the crash child rewrites over and over.
const crashObjects = 4

// TestCrashChildWriter is not a test on its own: TestKilledWriterLeavesWholeFiles
// runs the test binary again with crashChildEnv set, and this function
// then writes to the store in that folder until it is killed.
func TestCrashChildWriter(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestKilledWriterLeavesWholeFiles")
	}
	s, err := Open(dir, newScheme(t))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	c := s.Client()
	ctx := ctxT(t)
	for i := range crashObjects {
		w := crashVersion(fmt.Sprintf("obj%d", i), 1)
		if err := c.Create(ctx, w); err != nil && !apierrors.IsAlreadyExists(err) {
			fmt.Fprintln(os.Stderr, "child create:", err)
			os.Exit(3)
		}
	}
	fmt.Println("ready")
	for n := 0; ; n++ {
		name := fmt.Sprintf("obj%d", n%crashObjects)
		var cur wallsv1.AddonWall
		if err := c.Get(ctx, client.ObjectKey{Namespace: "host1", Name: name}, &cur); err != nil {
			fmt.Fprintln(os.Stderr, "child get:", err)
			os.Exit(3)
		}
		v, _ := strconv.Atoi(cur.Labels["version"])
		next := crashVersion(name, v+1)
		next.ObjectMeta = cur.ObjectMeta
		next.Labels = map[string]string{"version": strconv.Itoa(v + 1)}
		if err := c.Update(ctx, next); err != nil {
			fmt.Fprintln(os.Stderr, "child update:", err)
			os.Exit(3)
		}
		cur.Status.Reason = "Version" + strconv.Itoa(v+1)
		cur.ResourceVersion = next.ResourceVersion
		if err := c.Status().Update(ctx, &cur); err != nil {
			fmt.Fprintln(os.Stderr, "child status update:", err)
			os.Exit(3)
		}
	}
}

// crashVersion is version v of an object: its label, its install folder
// and its argument count all say v, so a file mixing two versions (or
// cut short) cannot pass as whole.
func crashVersion(name string, v int) *wallsv1.AddonWall {
	w := testWall("host1", name)
	w.Labels = map[string]string{"version": strconv.Itoa(v)}
	w.Spec.InstallDir = fmt.Sprintf("/bundles/%s/%d", name, v)
	w.Spec.Launcher.Args = make([]string, v%50+1)
	for i := range w.Spec.Launcher.Args {
		w.Spec.Launcher.Args[i] = fmt.Sprintf("arg-%d", v)
	}
	return w
}

// TestKilledWriterLeavesWholeFiles kills a writing child process with
// SIGKILL at random moments, 50 times, and checks after each kill that
// every file parses and is one whole version, and that the version
// counter never goes back.
func TestKilledWriterLeavesWholeFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns 50 child processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var lastMax uint64
	for iter := range 50 {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestCrashChildWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 6)
		if _, err := out.Read(buf); err != nil {
			t.Fatalf("child %d did not start: %v", iter, err)
		}
		if iter == 0 {
			// A second writing process is refused while the child
			// holds the store.
			if _, err := Open(dir, newScheme(t)); err == nil || !strings.Contains(err.Error(), "in use by another") {
				t.Fatalf("open beside a writing process: %v, want in-use error", err)
			}
		}
		time.Sleep(time.Duration(rng.Intn(40)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("child %d ended by itself (%v): it failed before the kill", iter, err)
		}
		lastMax = checkWholeFiles(t, dir, lastMax)
	}
	// A writer after all the kills gets a version past every one on disk.
	s := openStore(t, dir)
	var w wallsv1.AddonWall
	ctx := ctxT(t)
	if err := s.Client().Get(ctx, client.ObjectKey{Namespace: "host1", Name: "obj0"}, &w); err != nil {
		t.Fatal(err)
	}
	w.Spec.Linked = !w.Spec.Linked
	if err := s.Client().Update(ctx, &w); err != nil {
		t.Fatal(err)
	}
	if rv, _ := parseRV(w.ResourceVersion); rv <= lastMax {
		t.Fatalf("new version %d is not past the highest on disk %d", rv, lastMax)
	}
	temps, _ := filepath.Glob(filepath.Join(dir, "walls.addonwall.dev", "addonwalls", "host1", ".*"))
	if len(temps) != 0 {
		t.Fatalf("stale temp files left after a writer reopened: %v", temps)
	}
}

// checkWholeFiles opens the store read-only and checks every object is a
// whole version; it returns the highest resourceVersion seen.
func checkWholeFiles(t *testing.T, dir string, lastMax uint64) uint64 {
	t.Helper()
	s, err := Open(dir, newScheme(t), ReadOnly(), WithoutFileWatch())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ps := s.Problems(); len(ps) != 0 {
		t.Fatalf("files refused after a kill: %v", ps)
	}
	var list wallsv1.AddonWallList
	if err := s.Client().List(ctxT(t), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != crashObjects {
		t.Fatalf("%d objects after a kill, want %d", len(list.Items), crashObjects)
	}
	var max uint64
	for _, w := range list.Items {
		v, _ := strconv.Atoi(w.Labels["version"])
		want := crashVersion(w.Name, v)
		if w.Spec.InstallDir != want.Spec.InstallDir || len(w.Spec.Launcher.Args) != len(want.Spec.Launcher.Args) {
			t.Fatalf("%s is not a whole version: label %d installDir %s args %d", w.Name, v, w.Spec.InstallDir, len(w.Spec.Launcher.Args))
		}
		rv, ok := parseRV(w.ResourceVersion)
		if !ok {
			t.Fatalf("%s has resourceVersion %q", w.Name, w.ResourceVersion)
		}
		if rv > max {
			max = rv
		}
	}
	if max < lastMax {
		t.Fatalf("highest resourceVersion went back from %d to %d", lastMax, max)
	}
	return max
}
