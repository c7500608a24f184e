package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/e2eenv"
)

// The real filesystem server from npm, granted one folder to read, inside
// its wall. It is started with "/" as its allowed directory, so the server
// itself would read and write anything: every refusal below is the wall's.
// Each refusal sits beside a positive control on the same tool.
//
// SECURITY-CASES: FS-01 (secrets by absolute path: ~/.ssh/id_rsa,
// mcp-addons.json), FS-02 (another add-on's data, real spelling), FS-03
// (.env in an owner read folder), FS-10 (writes into a read-only grant),
// FS-20 (a read grant is never widened).
func TestFilesystemServerInItsWall(t *testing.T) {
	e2eenv.Bwrap(t)
	h := newHome(t)
	const canary = "canary-7f3d9a1e"

	// The owner's home, with a key in ~/.ssh.
	fakeHome := filepath.Join(h.root, "home")
	mkfile(t, filepath.Join(fakeHome, ".ssh", "id_rsa"), "-----BEGIN KEY----- "+canary)
	// The folder the owner grants, with a note and a .env beside it.
	notes := filepath.Join(h.root, "shared", "notes")
	mkfile(t, filepath.Join(notes, "note.txt"), "a note the owner shared")
	mkfile(t, filepath.Join(notes, ".env"), "API_KEY="+canary)
	mkfile(t, filepath.Join(notes, "deep", "er", ".env"), "API_KEY="+canary)
	// Another add-on's data.
	mkfile(t, filepath.Join(h.paths.DataDir, "other", "secret.txt"), canary)

	entry := h.installNodeServer("fs", "server-filesystem", map[string]any{
		"env_vars": []any{map[string]any{"name": "NOTES_DIR"}},
		"sandbox":  map[string]any{"files": map[string]any{"read": []string{"NOTES_DIR"}}},
	}, "/")
	entry["env"] = map[string]string{"NOTES_DIR": notes}
	h.write("mcp-addons.json", map[string]any{"fs": entry, "other": h.addon("other", nil)})
	// A value in mcp-addons.json that the add-on must not read either.
	h.runWalls(walledEnv(map[string]string{"HOME": fakeHome}), nil)
	h.waitWord("fs", "walled", 15*time.Second)

	ctx := ctxFor(t, 2*time.Minute)
	s, err := h.mcpConnect(ctx, "fs")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.InitializeResult().ServerInfo.Name; got != "secure-filesystem-server" {
		t.Fatalf("server name %q: not the filesystem server", got)
	}
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tl := range tools.Tools {
		names[tl.Name] = true
	}
	for _, want := range []string{"read_text_file", "write_file", "list_directory"} {
		if !names[want] {
			t.Fatalf("the server lists no %s tool: %v", want, names)
		}
	}

	read := func(path string) (string, bool) {
		t.Helper()
		text, isErr, err := s.callText(ctx, "read_text_file", map[string]any{"path": path})
		if err != nil {
			t.Fatal(err)
		}
		return text, isErr
	}

	// Positive control: the granted note reads.
	if text, isErr := read(filepath.Join(notes, "note.txt")); isErr || text != "a note the owner shared" {
		t.Fatalf("reading the granted note: error %v, text %q", isErr, text)
	}
	// Refusals on the same tool. A masked .env reads as empty or fails;
	// the rest are not in the wall at all.
	for _, p := range []string{
		filepath.Join(notes, ".env"),
		filepath.Join(notes, "deep", "er", ".env"),
		filepath.Join(fakeHome, ".ssh", "id_rsa"),
		h.paths.AddonsFile(),
		filepath.Join(h.paths.DataDir, "other", "secret.txt"),
	} {
		text, isErr := read(p)
		if strings.Contains(text, canary) {
			t.Errorf("the add-on read %s: %q", p, text)
		}
		if !isErr && text != "" {
			t.Errorf("reading %s gave %q, want an error or nothing", p, text)
		}
	}
	// mcp-addons.json holds NOTES_DIR's value: the file itself must be out
	// of reach (checked above), not just its canaries.
	if text, isErr := read(h.paths.AddonsFile()); !isErr {
		t.Errorf("mcp-addons.json is readable in the wall: %q", text)
	}

	write := func(path string) (string, bool) {
		t.Helper()
		text, isErr, err := s.callText(ctx, "write_file", map[string]any{"path": path, "content": "from the add-on"})
		if err != nil {
			t.Fatal(err)
		}
		return text, isErr
	}
	// Positive control: its own data folder is writable, and the file lands
	// on the host where the wall bound it.
	own := filepath.Join(h.paths.DataDir, "fs", "out.txt")
	if text, isErr := write(own); isErr {
		t.Fatalf("writing into its own data folder failed: %s", text)
	}
	if b, err := os.ReadFile(own); err != nil || string(b) != "from the add-on" {
		t.Fatalf("the write into its data folder did not reach %s: %q %v", own, b, err)
	}
	// Refusal: the read grant stays read-only.
	if text, isErr := write(filepath.Join(notes, "new.txt")); !isErr {
		t.Errorf("writing into the read-only grant succeeded: %s", text)
	}
	if _, err := os.Stat(filepath.Join(notes, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("a file appeared in the read-only grant (%v)", err)
	}
	if text, isErr := write(filepath.Join(notes, "note.txt")); !isErr {
		t.Errorf("overwriting the granted note succeeded: %s", text)
	}
	if b, _ := os.ReadFile(filepath.Join(notes, "note.txt")); string(b) != "a note the owner shared" {
		t.Errorf("the granted note changed on the host: %q", b)
	}

	h.endSession(s, "fs", "walled")
}

// The real "everything" server from npm, walled, beside the same server
// unwalled by the owner's choice: both answer a tool call through
// `addonwall connect`; only the unwalled one sees the controller's
// environment. The canaries are in this process's environment, which is the
// controller's (the harness runs it in-process).
//
// SECURITY-CASES: ENV-01 (the allowlist holds; the unwalled control shows
// the canary is there to leak), ENV-05 in part (the add-on's own value
// arrives).
func TestEverythingServerEnvironment(t *testing.T) {
	e2eenv.Bwrap(t)
	const plain, secret = "canary-plain-51c0e2", "canary-token-9b44d7"
	t.Setenv("ADDONWALL_CANARY_PLAIN", plain)
	t.Setenv("ADDONWALL_CANARY_TOKEN", secret)
	h := newHome(t)
	walled := h.installNodeServer("ev", "server-everything", nil, "stdio")
	walled["env"] = map[string]string{"OWN_SETTING": "own-value-3e1f"}
	open := h.installNodeServer("evopen", "server-everything", nil, "stdio")
	open["env"] = map[string]string{"OWN_SETTING": "own-value-3e1f"}
	h.write("mcp-addons.json", map[string]any{"ev": walled, "evopen": open})
	h.write("addon-walls.json", map[string]any{"version": 1, "addons": map[string]any{
		"evopen": map[string]any{"choice": "notWalled", "changedAt": "2026-11-01T00:00:00Z"}}})
	h.runWalls(walledEnv(nil), nil)
	h.waitWord("ev", "walled", 15*time.Second)
	h.waitWord("evopen", "not walled (your choice)", 15*time.Second)

	ctx := ctxFor(t, 2*time.Minute)
	env := map[string]string{}
	for _, id := range []string{"ev", "evopen"} {
		s, err := h.mcpConnect(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		tools, err := s.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(tools.Tools) < 5 {
			t.Fatalf("%s lists %d tools", id, len(tools.Tools))
		}
		if text, isErr, err := s.callText(ctx, "echo", map[string]any{"message": "hello " + id}); err != nil || isErr || text != "Echo: hello "+id {
			t.Fatalf("%s echo: %q %v %v", id, text, isErr, err)
		}
		text, isErr, err := s.callText(ctx, "get-env", map[string]any{})
		if err != nil || isErr {
			t.Fatalf("%s get-env: %q %v %v", id, text, isErr, err)
		}
		env[id] = text
		want := "walled"
		if id == "evopen" {
			want = "not walled (your choice)"
		}
		h.endSession(s, id, want)
	}

	for id, text := range env {
		if !strings.Contains(text, `"OWN_SETTING": "own-value-3e1f"`) {
			t.Errorf("%s: its own value did not arrive: %s", id, text)
		}
		if strings.Contains(text, secret) || strings.Contains(text, "ADDONWALL_CANARY_TOKEN") {
			t.Errorf("%s: a secret-looking controller variable reached the add-on", id)
		}
	}
	// Positive control: unwalled, the controller's plain variable arrives.
	if !strings.Contains(env["evopen"], plain) {
		t.Fatalf("the unwalled control does not see ADDONWALL_CANARY_PLAIN; the walled check below would prove nothing:\n%s", env["evopen"])
	}
	if strings.Contains(env["ev"], plain) || strings.Contains(env["ev"], "ADDONWALL_CANARY_PLAIN") {
		t.Errorf("the controller's environment reached the walled add-on:\n%s", env["ev"])
	}
}

// The same filesystem server installed with every file of node_modules a
// hard link (as pnpm's store installs it). Each link is masked, since its
// other names may be a .env outside the wall; that is more masks than
// bubblewrap takes arguments. The add-on is off at once, with the limit
// named on its card, rather than walled until bubblewrap refuses at the
// first connect. The copied install in TestFilesystemServerInItsWall is the
// positive control.
//
// SECURITY-CASES: FS-03 (masks hold for the file, not the name: a hard
// link is masked), FAULT-15 in spirit (a wall that cannot be set up is off
// with a card).
func TestHardLinkedBundleIsOffWithTheLimitNamed(t *testing.T) {
	e2eenv.Bwrap(t)
	h := newHome(t)
	entry := h.installNode("linked", "server-filesystem", nil, "-al", "/")
	h.write("mcp-addons.json", map[string]any{"linked": entry})
	h.runWalls(walledEnv(nil), nil)
	w := h.waitWord("linked", "off: it could not run inside its wall", 30*time.Second)
	if w.Status.Reason != wallsv1.ReasonPlanFailed || w.Status.Failure == nil ||
		!strings.Contains(w.Status.Failure.Message, "over the 9000 that bubblewrap accepts") {
		t.Fatalf("reason %s, card %+v; want PlanFailed naming bubblewrap's limit", w.Status.Reason, w.Status.Failure)
	}
	out, err := h.connectOnce("linked")
	if err == nil || !strings.Contains(out, "over the 9000 that bubblewrap accepts") {
		t.Fatalf("connect: %v\n%s", err, out)
	}
}
