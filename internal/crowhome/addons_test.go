package crowhome

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadAddonsGood(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, AddonsFileName, readTestdata(t, "mcp-addons.json"), 0o600)
	got, err := ReadAddons(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Problems) != 0 || len(got.BadKeys) != 0 {
		t.Fatalf("good file has problems: %v %v", got.Problems, got.BadKeys)
	}
	want := map[string]Entry{
		"rk": {Command: "./run.sh", Args: []string{}, CommandSHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
		"nd": {Command: "node", Args: []string{"server/index.js"}, Env: NewEnv(map[string]string{"ND_TOKEN": "s3cr3t-nd-token", "ND_URL": "http://127.0.0.1:8600"})},
		"kb": {Command: "/home/u/bin/uv", Args: []string{"run", "kb"}, Cwd: "/home/u/crow/bundles/knowledge-base"},
		"gw": {Command: "uvx", Args: []string{"--from", "git+https://github.com/x/y@0123456789abcdef0123456789abcdef01234567", "y"}},
		"web": {URL: "http://127.0.0.1:9/mcp", Transport: "http", OAuth: &OAuth{
			CredentialsFile: "/home/u/.crow/web-creds.json", TokenFile: "/home/u/.crow/web-token.json", Scopes: []string{"read"}}},
		"px": {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory@2026.1.1"}, NpxIntegrity: "sha512-AbCdEf0123456789+/=="},
	}
	if len(got.Entries) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got.Entries), len(want))
	}
	for id := range want {
		if !sameEntry(got.Entries[id], want[id]) {
			t.Errorf("%s: got %v, want %v (values not shown)", id, got.Entries[id], want[id])
		}
	}
	if got.SHA256 != sha256Hex(readTestdata(t, "mcp-addons.json")) {
		t.Errorf("SHA256 is not the hash of the bytes read")
	}
}

// Each case holds one good entry ("ok") beside the bad one, so each row
// proves both the refusal and that it stays confined to its own id.
func manyVars(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"V%d": "x"`, i)
	}
	return strings.Join(parts, ", ")
}

// sameEntry compares two entries field by field, env values included.
func sameEntry(a, b Entry) bool {
	return reflect.DeepEqual(a.Redacted(), b.Redacted()) && reflect.DeepEqual(a.Args, b.Args) &&
		reflect.DeepEqual(a.Env.Values(), b.Env.Values()) && a.URL == b.URL && reflect.DeepEqual(a.OAuth, b.OAuth)
}

func TestReadAddonsBadEntry(t *testing.T) {
	const file = "/crow/mcp-addons.json"
	cases := []struct {
		name, entry, key, msg string
	}{
		{"duplicate key", `{"command": "a", "command": "b"}`, `["bad"].command`, "duplicate key"},
		{"case-variant duplicate", `{"command": "a", "Command": "b"}`, `["bad"].Command`, "letter case"},
		{"case-variant alone", `{"Command": "node"}`, `["bad"].Command`, "case-sensitive"},
		{"args not a list", `{"command": "a", "args": "x"}`, `["bad"].args`, "must be a list, not a string"},
		{"arg not a string", `{"command": "a", "args": ["x", "y", 3]}`, `["bad"].args[2]`, "must be a string, not a number"},
		{"NUL in an arg", `{"command": "a", "args": ["x\u0000--bind"]}`, `["bad"].args[0]`, "NUL character"},
		{"too many args", `{"command": "a", "args": [` + strings.TrimSuffix(strings.Repeat(`"x",`, 65), ",") + `]}`, `["bad"].args`, "at most 64"},
		{"env not an object", `{"command": "a", "env": ["A=1"]}`, `["bad"].env`, "must be an object"},
		{"env value a number", `{"command": "a", "env": {"PORT": 8600}}`, `["bad"].env["PORT"]`, "must be a string, not a number"},
		{"env key with a dash", `{"command": "a", "env": {"MY-KEY": "v"}}`, `["bad"].env["MY-KEY"]`, "not an environment variable name"},
		{"env key with =", `{"command": "a", "env": {"A=B": "v"}}`, `["bad"].env["A=B"]`, "not an environment variable name"},
		{"env key starting with a digit", `{"command": "a", "env": {"1X": "v"}}`, `["bad"].env["1X"]`, "not an environment variable name"},
		{"env keys differing in case", `{"command": "a", "env": {"path": "a", "PATH": "b"}}`, `["bad"].env["PATH"]`, "letter case"},
		{"env key with a newline", `{"command": "a", "env": {"A\nB": "v"}}`, `["bad"].env["A\nB"]`, "not an environment variable name"},
		{"empty env key", `{"command": "a", "env": {"": "v"}}`, `["bad"].env[""]`, "not an environment variable name"},
		{"too many env vars", `{"command": "a", "env": {` + manyVars(maxEnvVars+1) + `}}`, `["bad"].env`, "at most 1024"},
		{"env value too long", `{"command": "a", "env": {"A": "` + strings.Repeat("v", maxEnvString) + `"}}`, `["bad"].env["A"]`, "longer than exec allows"},
		{"relative cwd", `{"command": "a", "cwd": "../.."}`, `["bad"].cwd`, "absolute path"},
		{"cwd not a string", `{"command": "a", "cwd": 1}`, `["bad"].cwd`, "must be a string"},
		{"unknown transport", `{"command": "a", "transport": "sse"}`, `["bad"].transport`, `"stdio" or "http"`},
		{"uppercase sha", `{"command": "./run.sh", "command_sha256": "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08"}`, `["bad"].command_sha256`, "64 lowercase hex"},
		{"short sha", `{"command": "./run.sh", "command_sha256": "abc"}`, `["bad"].command_sha256`, "64 lowercase hex"},
		{"bad integrity", `{"command": "npx", "npx_integrity": "md5-xyz"}`, `["bad"].npx_integrity`, "integrity"},
		{"oauth scopes not strings", `{"url": "http://x", "oauth": {"scopes": [1]}}`, `["bad"].oauth.scopes[0]`, "must be a string"},
		{"nothing to start", `{"args": ["x"]}`, `["bad"]`, "neither a command nor a url"},
		{"entry not an object", `["node"]`, `["bad"]`, "must be an object, not a list"},
		{"command too long", `{"command": "` + strings.Repeat("c", 513) + `"}`, `["bad"].command`, "longer than 512"},
		{"duplicate inside an unknown key", `{"command": "a", "extra": {"x": 1, "x": 2}}`, `["bad"].extra.x`, "duplicate key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"ok": {"command": "node", "args": ["index.js"]}, "bad": ` + tc.entry + `, "ok2": {"url": "http://127.0.0.1:1/mcp"}}`
			got, err := parseAddons(file, []byte(doc))
			if err != nil {
				t.Fatalf("one bad entry must not fail the file: %v", err)
			}
			wantFileError(t, got.Problems["bad"], file, tc.key, tc.msg)
			if _, ok := got.Entries["bad"]; ok {
				t.Errorf("the bad entry must not be in Entries")
			}
			if got.Entries["ok"].Command != "node" || got.Entries["ok2"].URL == "" {
				t.Errorf("the good entries must stay readable, got %v", got.Entries)
			}
			if len(got.Problems) != 1 || len(got.BadKeys) != 0 {
				t.Errorf("want exactly one problem, got %v %v", got.Problems, got.BadKeys)
			}
		})
	}
}

func TestReadAddonsDuplicateID(t *testing.T) {
	const file = "m.json"
	got, err := parseAddons(file, []byte(`{"kb": {"command": "a"}, "ok": {"command": "b"}, "kb": {"command": "evil"}}`))
	if err != nil {
		t.Fatal(err)
	}
	wantFileError(t, got.Problems["kb"], file, `["kb"]`, "duplicate key")
	if _, ok := got.Entries["kb"]; ok {
		t.Errorf("neither copy of a duplicated id may be used")
	}
	if got.Entries["ok"].Command != "b" {
		t.Errorf("the other entry must stay readable")
	}
}

func TestReadAddonsBadIDs(t *testing.T) {
	const file = "m.json"
	bad := []string{"../x", "x/../../y", "/abs", ".", "..", "", "a/b", "WEB", "-rf", ".hidden", "kb.migrating", "kb.linked-20260101", "kb.migrated-1", strings.Repeat("a", 65), "caf\u00e9"}
	good := []string{"kb", "knowledge-base", "a", "0", "a.b_c-d", strings.Repeat("a", 64)}
	var doc strings.Builder
	doc.WriteString("{")
	for _, id := range append(append([]string{}, bad...), good...) {
		k, _ := json.Marshal(id)
		fmt.Fprintf(&doc, "%s: {\"command\": \"node\"},", k)
	}
	doc.WriteString(`"last": {"command": "node"}}`)
	got, err := parseAddons(file, []byte(doc.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.BadKeys) != len(bad) {
		t.Errorf("want %d bad keys, got %d: %v", len(bad), len(got.BadKeys), got.BadKeys)
	}
	for _, id := range bad {
		found := false
		for _, fe := range got.BadKeys {
			if fe.Key == path(nil).mapKey(id).String() && strings.Contains(fe.Msg, "not an add-on id") {
				found = true
			}
		}
		if !found {
			t.Errorf("id %q must be reported as a bad key", id)
		}
		if _, ok := got.Entries[id]; ok {
			t.Errorf("id %q must not be an entry", id)
		}
	}
	for _, id := range append(good, "last") {
		if _, ok := got.Entries[id]; !ok {
			t.Errorf("good id %q must be an entry", id)
		}
	}
}

func TestReadAddonsCaseVariantIDs(t *testing.T) {
	const file = "m.json"
	// "KB" is no add-on id, but beside "kb" it reads as the same key to
	// anyone who folds case, so kb is not trusted either.
	got, err := parseAddons(file, []byte(`{"KB": {"command": "sh"}, "kb": {"command": "node"}, "ok": {"command": "node"}}`))
	if err != nil {
		t.Fatal(err)
	}
	wantFileError(t, got.Problems["kb"], file, `["kb"]`, "letter case")
	if len(got.BadKeys) != 1 || got.BadKeys[0].Key != `["KB"]` {
		t.Errorf("KB must be a bad key, got %v", got.BadKeys)
	}
	if _, ok := got.Entries["ok"]; !ok || len(got.Entries) != 1 {
		t.Errorf("only ok must be an entry, got %v", got.Entries)
	}
}

func TestReadAddonsWholeFile(t *testing.T) {
	const file = "m.json"
	cases := []struct{ name, doc, key, msg string }{
		{"a list", `[{"command": "node"}]`, "", "must be a JSON object keyed by add-on id, not a list"},
		{"a string", `"x"`, "", "not a string"},
		{"trailing data", `{"kb": {"command": "node"}} {"evil": {"command": "sh"}}`, "", "data after the end"},
		{"raw NUL", "{\"kb\": {\"command\": \"no\x00de\"}}", `["kb"].command`, "NUL byte"},
		{"too deep", `{"kb": {"command": "node", "x": ` + nested(MaxDepth-1) + `}}`, `["kb"].x` + strings.Repeat(".a", MaxDepth-2), "deeper than 64"},
		{"too large", `{"kb": {"command": "node", "x": "` + strings.Repeat("x", MaxFileSize) + `"}}`, "", "larger than"},
		{"truncated", `{"kb": {"command": "node"`, `["kb"]`, "ends before"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseAddons(file, []byte(tc.doc))
			wantFileError(t, err, file, tc.key, tc.msg)
		})
	}
}

func TestReadAddonsFiles(t *testing.T) {
	dir := t.TempDir()
	good := readTestdata(t, "mcp-addons.json")

	_, err := ReadAddons(filepath.Join(dir, "missing.json"))
	wantFileError(t, err, filepath.Join(dir, "missing.json"), "", "does not exist")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file must be errors.Is fs.ErrNotExist")
	}

	// Crow's own file may be a symlink (an owner's dotfiles); it is followed.
	real := writeFile(t, dir, "real.json", good, 0o600)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadAddons(link); err != nil || len(got.Entries) != 6 {
		t.Fatalf("symlinked mcp-addons.json: %v", err)
	}

	// A FIFO must fail at once, not hang the reader.
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadAddons(fifo); done <- err }()
	select {
	case err := <-done:
		wantFileError(t, err, fifo, "", "not a regular file")
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO hung")
	}

	dirPath := filepath.Join(dir, "adir")
	if err := os.Mkdir(dirPath, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = ReadAddons(dirPath)
	wantFileError(t, err, dirPath, "", "not a regular file")

	big := writeFile(t, dir, "big.json", append([]byte(`{"a":"`), make([]byte, MaxFileSize)...), 0o600)
	_, err = ReadAddons(big)
	wantFileError(t, err, big, "", "larger than 4194304 bytes")
}

func TestEntryNeverPrintsSecrets(t *testing.T) {
	const secret = "s3cr3t-value-Zq9"
	const argSecret = "--token=arg-secret-Xy7"
	e := Entry{
		Command: "node",
		Args:    []string{"index.js", argSecret},
		Env:     NewEnv(map[string]string{"API_TOKEN": secret, "PLAIN": "also-" + secret}),
		URL:     "https://user:" + secret + "@example.com/mcp?key=" + secret,
	}
	// Positive control: the values are there for the spawn to use.
	if v, _ := e.Env.Get("API_TOKEN"); v != secret || !strings.Contains(e.URL, secret) || e.Args[1] != argSecret {
		t.Fatal("the entry must still carry its values")
	}
	file := AddonsFile{Entries: map[string]Entry{"kb": e}}
	type holder struct {
		E Entry
		P *Entry
	}
	h := holder{E: e, P: &e}
	var out []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v"} {
		out = append(out,
			fmt.Sprintf(verb, e), fmt.Sprintf(verb, &e), fmt.Sprintf(verb, e.Env),
			fmt.Sprintf(verb, []Entry{e}), fmt.Sprintf(verb, map[string]Entry{"kb": e}),
			fmt.Sprintf(verb, file), fmt.Sprintf(verb, &file), fmt.Sprintf(verb, h))
	}
	out = append(out, e.String(), e.GoString(), e.Env.String(), fmt.Sprint(e), fmt.Sprintln(e.Env))
	for _, v := range []any{e, &e, e.Env, file, h, e.MarshalLog(), e.Env.MarshalLog()} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	for _, s := range out {
		if strings.Contains(s, secret) || strings.Contains(s, "arg-secret") {
			t.Errorf("a printed form leaks a value: %s", s)
		}
	}
	// fmt cannot call methods on an unexported field; the env values must
	// stay out of reach there too (arguments and URL are plain strings and
	// are hidden only by the Entry's own methods).
	type private struct{ e Entry }
	pr := private{e: Entry{Command: "node", Env: NewEnv(map[string]string{"API_TOKEN": secret})}}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%d"} {
		if s := fmt.Sprintf(verb, pr); strings.Contains(s, secret) || strings.Contains(s, fmt.Sprintf("%x", secret)) {
			t.Errorf("an unexported Entry field leaks an env value with %s: %s", verb, s)
		}
	}
	// Positive control: the printed forms still name the keys and the command.
	if s := fmt.Sprint(e); !strings.Contains(s, "API_TOKEN") || !strings.Contains(s, "node") {
		t.Errorf("the printed form should name the env keys and command: %s", s)
	}
}
