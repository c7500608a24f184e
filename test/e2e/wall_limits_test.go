package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/e2eenv"
	"github.com/addonwall/addonwall/internal/launcher"
	"github.com/addonwall/addonwall/internal/profile"
	"github.com/addonwall/addonwall/internal/scheme"
	"github.com/addonwall/addonwall/internal/store"
)

// Limits are watched from outside the wall; a child over one is stopped and
// its status names the limit (seed 003). Crow's files carry no limits, so
// these add-ons' AddonWalls are written by hand, as an owner may: the spec
// the importer would make, plus spec.limits, without the importer's
// annotation (the importer leaves such a resource alone).
//
// SECURITY-CASES: PROC-21 (memory balloon, filling the data folder: the
// wall is stopped with a card and the controller keeps serving). The CPU
// limit, averaged over 30 s, is tested on its arithmetic in
// internal/session (TestCPULimitArithmetic): an end-to-end run would burn a
// core for half a minute on a shared machine.

// handWritten stores the AddonWall of each id as the importer would make
// it, changed by mutate, before the controller starts.
func (h *home) handWritten(mutate map[string]func(*wallsv1.AddonWallSpec)) {
	h.t.Helper()
	specs, ok := profile.Specs(profile.Gather(h.paths, launcher.TrustedDirs))
	if !ok {
		h.t.Fatal("the test's mcp-addons.json is not valid")
	}
	sch, err := scheme.New()
	if err != nil {
		h.t.Fatal(err)
	}
	st, err := store.Open(h.paths.Store, sch, store.WithoutFileWatch())
	if err != nil {
		h.t.Fatal(err)
	}
	defer st.Close()
	for id, m := range mutate {
		spec, ok := specs[id]
		if !ok {
			h.t.Fatalf("no spec for %s", id)
		}
		m(&spec)
		w := &wallsv1.AddonWall{ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: testNS}, Spec: spec}
		if err := st.Client().Create(context.Background(), w); err != nil {
			h.t.Fatalf("storing the hand-written AddonWall %s: %v", id, err)
		}
	}
}

func limits(memory, disk string) func(*wallsv1.AddonWallSpec) {
	return func(s *wallsv1.AddonWallSpec) {
		if memory != "" {
			q := resource.MustParse(memory)
			s.Limits.Memory = &q
		}
		if disk != "" {
			q := resource.MustParse(disk)
			s.Limits.Disk = &q
		}
	}
}

// openSession keeps `addonwall connect ID` running with its stdin open;
// it ends when the test does. done is closed when connect exits.
func (h *home) openSession(id string) (done <-chan struct{}, stderr *lockedBuffer) {
	h.t.Helper()
	stderr = &lockedBuffer{}
	cmd := h.connectCmd(id, stderr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	ch := make(chan struct{})
	go func() { _ = cmd.Wait(); close(ch) }()
	h.t.Cleanup(func() {
		stdin.Close()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-ch
		}
	})
	return ch, stderr
}

// stoppedOverLimit waits for the add-on to be stopped for a limit and
// returns the card's message.
func (h *home) stoppedOverLimit(id string) string {
	h.t.Helper()
	w := h.waitWord(id, "off: it stopped", 60*time.Second)
	if w.Status.Reason != wallsv1.ReasonOverLimit || w.Status.Failure == nil || w.Status.Failure.Ref == "" {
		h.t.Fatalf("%s: reason %s, card %+v; want OverLimit with a card", id, w.Status.Reason, w.Status.Failure)
	}
	return w.Status.Failure.Message
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

func waitFile(t *testing.T, path string, within time.Duration) {
	t.Helper()
	eventually(t, within, path+" appears", func() (bool, string) {
		_, err := os.Stat(path)
		return err == nil, fmt.Sprint(err)
	})
}

func TestMemoryLimitStopsTheWall(t *testing.T) {
	e2eenv.Bwrap(t)
	h := newHome(t)
	// A shell that holds about 150 MB in a variable, says so, and waits.
	hog := func(id string) map[string]any {
		h.addon(id, nil)
		return map[string]any{"command": "/bin/sh", "args": []string{"-c", fmt.Sprintf(
			`x=$(head -c 150000000 /dev/zero | tr '\0' a); echo held > %s; cat; echo "${#x}"`,
			filepath.Join(h.paths.DataDir, id, "held"))}}
	}
	h.write("mcp-addons.json", map[string]any{"big": hog("big"), "roomy": hog("roomy")})
	h.handWritten(map[string]func(*wallsv1.AddonWallSpec){"big": limits("64Mi", ""), "roomy": limits("1Gi", "")})
	h.runWalls(walledEnv(nil), nil)
	h.waitWord("big", "walled", 15*time.Second)
	h.waitWord("roomy", "walled", 15*time.Second)

	// Positive control: the same balloon under a 1 GiB limit keeps
	// running past several samples.
	roomyDone, _ := h.openSession("roomy")
	waitFile(t, filepath.Join(h.paths.DataDir, "roomy", "held"), 60*time.Second)
	select {
	case <-roomyDone:
		w, _ := h.wall("roomy")
		t.Fatalf("the add-on under its limit was stopped: %s %+v", w.Status.Reason, w.Status.Failure)
	case <-time.After(4 * time.Second):
	}
	if w, _ := h.wall("roomy"); w.Status.Sessions.Active != 1 || w.Status.Failure != nil {
		t.Fatalf("the add-on under its limit: sessions %+v, card %+v", w.Status.Sessions, w.Status.Failure)
	}

	bigDone, stderr := h.openSession("big")
	msg := h.stoppedOverLimit("big")
	used := regexp.MustCompile(`it used (\d+) MiB of memory, over its 64 MiB limit`).FindStringSubmatch(msg)
	if used == nil || atoi(used[1]) <= 64 {
		t.Errorf("the card says %q, want it to name the memory used and the 64 MiB limit", msg)
	}
	select {
	case <-bigDone:
	case <-time.After(20 * time.Second):
		t.Fatal("connect did not end when its wall was stopped")
	}
	if s := stderr.String(); !regexp.MustCompile(`over its 64 MiB limit`).MatchString(s) {
		t.Errorf("connect's error does not name the limit: %q", s)
	}
	// The controller keeps serving: the roomy one is still up.
	if w, _ := h.wall("roomy"); w.Status.Sessions.Active != 1 {
		t.Errorf("stopping one wall touched another: %+v", w.Status.Sessions)
	}
}

func TestDiskLimitStopsTheWall(t *testing.T) {
	e2eenv.Bwrap(t)
	h := newHome(t)
	// A shell that writes 4 MB into its data folder, says so, and waits.
	filler := func(id string) map[string]any {
		h.addon(id, nil)
		data := filepath.Join(h.paths.DataDir, id)
		return map[string]any{"command": "/bin/sh", "args": []string{"-c", fmt.Sprintf(
			`head -c 4000000 /dev/urandom > %s/fill && echo wrote > %s/wrote; exec cat`, data, data)}}
	}
	h.write("mcp-addons.json", map[string]any{"full": filler("full"), "roomy": filler("roomy")})
	h.handWritten(map[string]func(*wallsv1.AddonWallSpec){"full": limits("", "1Mi"), "roomy": limits("", "64Mi")})
	h.runWalls(walledEnv(nil), nil)
	h.waitWord("full", "walled", 15*time.Second)
	h.waitWord("roomy", "walled", 15*time.Second)

	// Positive control first: the same writes under a 64 MiB limit. The
	// data folder is measured at the first sample and every 10 s after, so
	// 11.5 s after its write it has been measured at least once since.
	roomyDone, _ := h.openSession("roomy")
	waitFile(t, filepath.Join(h.paths.DataDir, "roomy", "wrote"), 30*time.Second)
	wrote := time.Now()

	fullDone, _ := h.openSession("full")
	msg := h.stoppedOverLimit("full")
	held := regexp.MustCompile(`its data folder holds (\d+) MiB, over its 1 MiB limit`).FindStringSubmatch(msg)
	if held == nil || atoi(held[1]) <= 1 {
		t.Errorf("the card says %q, want it to name the disk used and the 1 MiB limit", msg)
	}
	select {
	case <-fullDone:
	case <-time.After(20 * time.Second):
		t.Fatal("connect did not end when its wall was stopped")
	}
	select {
	case <-roomyDone:
		w, _ := h.wall("roomy")
		t.Fatalf("the add-on under its disk limit was stopped: %s %+v", w.Status.Reason, w.Status.Failure)
	case <-time.After(time.Until(wrote.Add(11500 * time.Millisecond))):
	}
	if w, _ := h.wall("roomy"); w.Status.Sessions.Active != 1 || w.Status.Failure != nil {
		t.Fatalf("the add-on under its disk limit: sessions %+v, card %+v", w.Status.Sessions, w.Status.Failure)
	}
}
