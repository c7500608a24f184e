package crowhome

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestReadWallsGood(t *testing.T) {
	home := t.TempDir()
	data := readTestdata(t, "addon-walls.json")
	file := writeFile(t, home, WallsFileName, data, 0o600)
	if file != WallsPath(home) {
		t.Fatalf("WallsPath = %s", WallsPath(home))
	}
	w, err := ReadWalls(file)
	if err != nil {
		t.Fatal(err)
	}
	fw := w.Addons["funkwhale"]
	kb := w.Addons["kb"]
	if len(w.Addons) != 2 || fw.Choice != ChoiceNotWalled || kb.Choice != ChoiceWalled ||
		!fw.ChangedAt.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) ||
		!kb.ChangedAt.Equal(time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)) {
		t.Errorf("addons: %+v", w.Addons)
	}
	if len(w.Announced) != 1 || !w.Announced[AnnounceWallsOn].Equal(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("announced: %+v", w.Announced)
	}
	if w.SHA256 != sha256Hex(data) {
		t.Errorf("SHA256 is not the hash of the bytes read")
	}

	missing, err := ReadWalls(filepath.Join(home, "none.json"))
	if err != nil || len(missing.Addons) != 0 || len(missing.Announced) != 0 || missing.SHA256 != "" {
		t.Errorf("a missing file must read as the empty state, got %+v, %v", missing, err)
	}
}

func TestReadWallsBad(t *testing.T) {
	const file = "/h/addon-walls.json"
	choice := `{"choice": "walled", "changedAt": "2026-01-02T03:04:05Z"}`
	cases := []struct{ name, doc, key, msg string }{
		{"no version", `{"addons": {}}`, `version`, "is missing"},
		{"version 2", `{"version": 2}`, `version`, "only version this build reads"},
		{"version a string", `{"version": "1"}`, `version`, "must be a number"},
		{"version 1.0", `{"version": 1.0}`, `version`, "only version this build reads"},
		{"unknown top key", `{"version": 1, "owner": "me"}`, `owner`, "not a known key"},
		{"case-variant top key", `{"version": 1, "Addons": {}}`, `Addons`, "case-sensitive"},
		{"duplicate version", `{"version": 1, "version": 1}`, `version`, "duplicate key"},
		{"bad id", `{"version": 1, "addons": {"../kb": ` + choice + `}}`, `addons["../kb"]`, "not an add-on id"},
		{"duplicate id", `{"version": 1, "addons": {"kb": ` + choice + `, "kb": ` + choice + `}}`, `addons["kb"]`, "duplicate key"},
		{"unknown choice", `{"version": 1, "addons": {"kb": {"choice": "off", "changedAt": "2026-01-02T03:04:05Z"}}}`, `addons["kb"].choice`, `"walled" or "notWalled"`},
		{"choice of another case", `{"version": 1, "addons": {"kb": {"choice": "Walled", "changedAt": "2026-01-02T03:04:05Z"}}}`, `addons["kb"].choice`, `"walled" or "notWalled"`},
		{"missing changedAt", `{"version": 1, "addons": {"kb": {"choice": "walled"}}}`, `addons["kb"].changedAt`, "is missing"},
		{"bad time", `{"version": 1, "addons": {"kb": {"choice": "walled", "changedAt": "yesterday"}}}`, `addons["kb"].changedAt`, "RFC 3339"},
		{"unknown key in an addon", `{"version": 1, "addons": {"kb": {"choice": "walled", "changedAt": "2026-01-02T03:04:05Z", "by": "x"}}}`, `addons["kb"].by`, "not a known key"},
		{"unknown announcement", `{"version": 1, "announced": {"firstBoot": "2026-01-02T03:04:05Z"}}`, `announced.firstBoot`, "not a known key"},
		{"announcement not a time", `{"version": 1, "announced": {"wallsOn": true}}`, `announced.wallsOn`, "must be a string"},
		{"addons null", `{"version": 1, "addons": null}`, `addons`, "must be an object, not null"},
		{"trailing data", `{"version": 1}x`, ``, "data after the end"},
		{"raw NUL", "{\"version\": 1, \"addons\": {\"kb\x00\": 1}}", `addons`, "NUL byte"},
		{"depth 65", `{"version": 1, "announced": ` + nested(MaxDepth) + `}`, `announced` + strings.Repeat(".a", MaxDepth-1), "deeper than 64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseWalls(file, []byte(tc.doc))
			wantFileError(t, err, file, tc.key, tc.msg)
		})
	}
	if _, err := parseWalls(file, []byte(`{"version": 1, "addons": {"kb": `+choice+`}, "announced": {}}`)); err != nil {
		t.Fatalf("positive control: %v", err)
	}
}

func mustMode(t *testing.T, file string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != want {
		t.Errorf("%s has mode %v, want %v", file, fi.Mode(), want)
	}
}

func TestSetChoiceCreatesAndKeeps(t *testing.T) {
	home := t.TempDir()
	file := WallsPath(home)
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)

	sum, err := SetChoice(file, "kb", ChoiceNotWalled, now)
	if err != nil {
		t.Fatal(err)
	}
	mustMode(t, file, 0o600)
	data, _ := os.ReadFile(file)
	if sum != sha256Hex(data) {
		t.Errorf("the returned hash is not the hash of the file")
	}
	if fp, _ := Fingerprint(file); fp != sum {
		t.Errorf("Fingerprint %s != returned %s", fp, sum)
	}
	want := "{\n  \"version\": 1,\n  \"addons\": {\n    \"kb\": {\n      \"choice\": \"notWalled\",\n      \"changedAt\": \"2026-05-06T07:08:09Z\"\n    }\n  },\n  \"announced\": {}\n}\n"
	if string(data) != want {
		t.Errorf("file content:\n%s\nwant:\n%s", data, want)
	}

	// Choosing the same again writes nothing and keeps the first time.
	sum2, err := SetChoice(file, "kb", ChoiceNotWalled, now.Add(time.Hour))
	if err != nil || sum2 != sum {
		t.Errorf("an unchanged choice must not write: %v %s %s", err, sum2, sum)
	}
	// "Wall it again".
	if _, err := SetChoice(file, "kb", ChoiceWalled, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	w, _ := ReadWalls(file)
	if w.Addons["kb"].Choice != ChoiceWalled || !w.Addons["kb"].ChangedAt.Equal(now.Add(2*time.Hour)) {
		t.Errorf("got %+v", w.Addons)
	}
}

func TestSetChoiceKeepsOtherContent(t *testing.T) {
	home := t.TempDir()
	file := writeFile(t, home, WallsFileName, readTestdata(t, "addon-walls.json"), 0o644)
	before, _ := ReadWalls(file)
	if _, err := SetChoice(file, "media", ChoiceWalled, time.Now()); err != nil {
		t.Fatal(err)
	}
	// The rewrite is a fresh 0600 file, whatever mode the old one had.
	mustMode(t, file, 0o600)
	after, _ := ReadWalls(file)
	for id, c := range before.Addons {
		if a := after.Addons[id]; a.Choice != c.Choice || !a.ChangedAt.Equal(c.ChangedAt) {
			t.Errorf("%s changed: %+v -> %+v", id, c, a)
		}
	}
	if !after.Announced[AnnounceWallsOn].Equal(before.Announced[AnnounceWallsOn]) || len(after.Announced) != 1 {
		t.Errorf("announced changed: %+v", after.Announced)
	}
	if after.Addons["media"].Choice != ChoiceWalled || len(after.Addons) != 3 {
		t.Errorf("got %+v", after.Addons)
	}
	// An owner's offset is kept as written.
	data, _ := os.ReadFile(file)
	if !bytes.Contains(data, []byte(`"2026-03-02T11:30:00+02:00"`)) {
		t.Errorf("the owner's time spelling changed:\n%s", data)
	}
}

func TestSetChoiceRefusals(t *testing.T) {
	home := t.TempDir()
	file := WallsPath(home)

	_, err := SetChoice(file, "../kb", ChoiceWalled, time.Now())
	wantFileError(t, err, file, `addons["../kb"]`, "not an add-on id")
	_, err = SetChoice(file, "kb", Choice("off"), time.Now())
	wantFileError(t, err, file, `addons["kb"].choice`, `"walled" or "notWalled"`)
	_, err = MarkAnnounced(file, Announcement("firstBoot"), time.Now())
	wantFileError(t, err, file, `announced`, "no marker")
	if _, err := os.Lstat(file); !os.IsNotExist(err) {
		t.Fatalf("a refused write must create nothing")
	}

	// An owner's broken edit is reported, never overwritten.
	broken := []byte(`{"version": 1, "addons": {"kb": {"choice": "walled"}}}`)
	writeFile(t, home, WallsFileName, broken, 0o600)
	_, err = SetChoice(file, "media", ChoiceWalled, time.Now())
	wantFileError(t, err, file, `addons["kb"].changedAt`, "nothing was written")
	if data, _ := os.ReadFile(file); !bytes.Equal(data, broken) {
		t.Errorf("the broken file was changed")
	}
	// Positive control: the same write succeeds on a valid file.
	writeFile(t, home, WallsFileName, []byte(`{"version": 1}`), 0o600)
	if _, err := SetChoice(file, "media", ChoiceWalled, time.Now()); err != nil {
		t.Fatalf("positive control: %v", err)
	}
}

func TestWriterRefusesSymlinks(t *testing.T) {
	home := t.TempDir()
	file := WallsPath(home)
	elsewhere := writeFile(t, t.TempDir(), "target.json", []byte(`{"version": 1}`), 0o600)
	if err := os.Symlink(elsewhere, file); err != nil {
		t.Fatal(err)
	}
	_, err := SetChoice(file, "kb", ChoiceNotWalled, time.Now())
	wantFileError(t, err, file, "", "symlink")
	_, err = ReadWalls(file)
	wantFileError(t, err, file, "", "symlink")
	_, err = Fingerprint(file)
	wantFileError(t, err, file, "", "symlink")
	if data, _ := os.ReadFile(elsewhere); string(data) != `{"version": 1}` {
		t.Errorf("the link's target was written: %s", data)
	}
	if fi, _ := os.Lstat(file); fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced")
	}
	// A dangling link is refused too.
	dangling := filepath.Join(t.TempDir(), WallsFileName)
	if err := os.Symlink(filepath.Join(home, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	_, err = SetChoice(dangling, "kb", ChoiceNotWalled, time.Now())
	wantFileError(t, err, dangling, "", "symlink")
	if _, err := os.Lstat(filepath.Join(home, "nowhere")); !os.IsNotExist(err) {
		t.Errorf("a dangling link's target was created")
	}

	// A symlinked lock file is refused, and its target not created.
	home2 := t.TempDir()
	file2 := WallsPath(home2)
	lockTarget := filepath.Join(t.TempDir(), "lock")
	if err := os.Symlink(lockTarget, wallsLockPath(file2)); err != nil {
		t.Fatal(err)
	}
	_, err = SetChoice(file2, "kb", ChoiceNotWalled, time.Now())
	wantFileError(t, err, file2, "", "is a symlink")
	if _, err := os.Lstat(lockTarget); !os.IsNotExist(err) {
		t.Errorf("the lock link's target was created")
	}
	// Positive control: the same home without the links is written.
	home3 := t.TempDir()
	if _, err := SetChoice(WallsPath(home3), "kb", ChoiceNotWalled, time.Now()); err != nil {
		t.Fatalf("positive control: %v", err)
	}
	mustMode(t, wallsLockPath(WallsPath(home3)), 0o600)
}

func TestMarkAnnounced(t *testing.T) {
	home := t.TempDir()
	file := WallsPath(home)
	t1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := SetChoice(file, "kb", ChoiceNotWalled, t1); err != nil {
		t.Fatal(err)
	}
	sum, err := MarkAnnounced(file, AnnounceWallsOn, t1)
	if err != nil {
		t.Fatal(err)
	}
	again, err := MarkAnnounced(file, AnnounceWallsOn, t1.Add(time.Hour))
	if err != nil || again != sum {
		t.Errorf("a marker already set must be kept without a write: %v", err)
	}
	if _, err := MarkAnnounced(file, AnnounceKillSwitch, t1.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	w, _ := ReadWalls(file)
	if !w.Announced[AnnounceWallsOn].Equal(t1) || !w.Announced[AnnounceKillSwitch].Equal(t1.Add(time.Minute)) || w.Addons["kb"].Choice != ChoiceNotWalled {
		t.Errorf("got %+v", w)
	}
}

func TestFingerprintSeesExternalEdits(t *testing.T) {
	home := t.TempDir()
	file := WallsPath(home)
	if fp, err := Fingerprint(file); fp != "" || err != nil {
		t.Fatalf("no file: %q %v", fp, err)
	}
	ours, err := SetChoice(file, "kb", ChoiceNotWalled, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if fp, _ := Fingerprint(file); fp != ours {
		t.Fatalf("our own write must fingerprint as ours")
	}
	// The owner flips it by hand.
	edited := []byte(`{"version": 1, "addons": {"kb": {"choice": "walled", "changedAt": "2026-01-01T00:00:00Z"}}}`)
	if err := os.WriteFile(file, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	if fp, _ := Fingerprint(file); fp == ours || fp != sha256Hex(edited) {
		t.Errorf("an outside edit must change the fingerprint")
	}
}

func TestSetChoiceConcurrentGoroutines(t *testing.T) {
	file := WallsPath(t.TempDir())
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := SetChoice(file, fmt.Sprintf("g-%d", i), ChoiceNotWalled, time.Now()); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	w, err := ReadWalls(file)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if w.Addons[fmt.Sprintf("g-%d", i)].Choice != ChoiceNotWalled {
			t.Errorf("lost the update for g-%d", i)
		}
	}
	if len(w.Addons) != n {
		t.Errorf("want %d choices, got %d", n, len(w.Addons))
	}
}

func helperCmd(t *testing.T, mode, file string, extra ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "CROWHOME_TEST_FILE="+file)
	cmd.Env = append(cmd.Env, extra...)
	return cmd
}

func TestSetChoiceConcurrentProcesses(t *testing.T) {
	file := WallsPath(t.TempDir())
	const procs, perProc, goroutines = 4, 20, 10
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for p := range procs {
		cmd := helperCmd(t, "setchoice", file, fmt.Sprintf("CROWHOME_TEST_PREFIX=p%d", p), fmt.Sprintf("CROWHOME_TEST_N=%d", perProc))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	// This process writes at the same time, from goroutines.
	var wg sync.WaitGroup
	for i := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := SetChoice(file, fmt.Sprintf("parent-%d", i), ChoiceWalled, time.Now()); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v: %s", i, err, outs[i])
		}
	}
	w, err := ReadWalls(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Addons) != procs*perProc+goroutines {
		t.Errorf("want %d choices, got %d: updates were lost", procs*perProc+goroutines, len(w.Addons))
	}
	for p := range procs {
		for i := range perProc {
			want := ChoiceWalled
			if i%2 == 1 {
				want = ChoiceNotWalled
			}
			if got := w.Addons[fmt.Sprintf("p%d-%d", p, i)].Choice; got != want {
				t.Errorf("p%d-%d: got %q, want %q", p, i, got, want)
			}
		}
	}
	mustMode(t, file, 0o600)
}

func tempLeftovers(t *testing.T, file string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(file))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), wallsTempPrefix(file)) {
			out = append(out, e.Name())
		}
	}
	return out
}

// A writer killed at any moment leaves the old file or the new one, never
// a half-written one, and its temp file is cleaned up by the next writer.
func TestWriterCrashSafety(t *testing.T) {
	file := WallsPath(t.TempDir())
	for round := range 12 {
		cmd := helperCmd(t, "churn", file)
		var out bytes.Buffer
		cmd.Stderr = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The churn writer never stops by itself: a failing round must not
		// leave it running.
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		// Kill only once the writer is busy writing: wait for its first
		// change to the file, then a random moment more.
		before, _ := Fingerprint(file)
		deadline := time.Now().Add(30 * time.Second)
		for fp, _ := Fingerprint(file); fp == before; fp, _ = Fingerprint(file) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the writer never wrote: %s", round, out.String())
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: the writer stopped on its own (%v): %s", round, err, out.String())
		}
		w, err := ReadWalls(file)
		if err != nil {
			t.Fatalf("round %d: after a kill the file must be whole: %v", round, err)
		}
		if round > 0 && len(w.Addons) == 0 {
			t.Errorf("round %d: earlier rounds' choices are gone", round)
		}
	}
	// A temp file a crashed writer left behind (planted here so the test
	// does not depend on the kill's timing) is removed by the next write and
	// never becomes the real file.
	stale := filepath.Join(filepath.Dir(file), wallsTempPrefix(file)+"planted")
	if err := os.WriteFile(stale, []byte(`{"version": 1, "addons": {"ev`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := SetChoice(file, "after", ChoiceWalled, time.Now()); err != nil {
		t.Fatal(err)
	}
	if left := tempLeftovers(t, file); len(left) != 0 {
		t.Errorf("temp files left: %v", left)
	}
	if w, err := ReadWalls(file); err != nil || w.Addons["after"].Choice != ChoiceWalled {
		t.Errorf("after: %v %+v", err, w)
	}
}
