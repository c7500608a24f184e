package store

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
)

func TestParseDocumentRefuses(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"valid (positive control)", "a: 1\nb: [x, y]\n", ""},
		{"empty", "", "file is empty"},
		{"two documents", "a: 1\n---\nb: 2\n", "more than one YAML document"},
		{"not a mapping", "- a\n- b\n", "top level must be a mapping"},
		{"syntax", "a: [1\n", "line"},
		{"nul byte", "a: 1\x00\n", "NUL"},
		{"duplicate key", "a: 1\na: 2\n", `key "a" appears twice`},
		{"alias", "a: &x 1\nb: *x\n", "aliases are not supported"},
		{"merge key", "a: &x {c: 1}\nb:\n  <<: *x\n", "merge keys"},
		{"non-string key", "1: a\n", "is not a string"},
		{"custom tag", "a: !foo bar\n", "tag !foo"},
		{"nan", "a: .nan\n", "finite"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := parseDocument([]byte(tc.in))
			if err == nil {
				_, err = nodeValue(doc, "")
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestNodeValueTypes(t *testing.T) {
	doc, err := parseDocument([]byte("s: text\nq: \"123\"\ni: 0x10\nf: 1.5\nb: true\nn: null\nt: 2024-01-02T03:04:05Z\nl: [a, 2]\nm: {k: v}\n"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := nodeValue(doc, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"s": "text", "q": "123", "i": int64(16), "f": 1.5, "b": true, "n": nil,
		"t": "2024-01-02T03:04:05Z", "l": []any{"a", int64(2)}, "m": map[string]any{"k": "v"}}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("got %#v\nwant %#v", v, want)
	}
}

func TestFieldLine(t *testing.T) {
	doc, err := parseDocument([]byte("spec:\n  launcher:\n    args:\n      - a\n      - b\n    transport: x\nmetadata:\n  labels:\n    app.kubernetes.io/name: z\n"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]int{
		"spec":                    1,
		"spec.launcher.transport": 6,
		"spec.launcher.args[1]":   5,
		"metadata.labels[app.kubernetes.io/name]": 9,
		"spec.launcher.missing":                   2,
		"status.conditions[0].reason":             0,
		"spec.launcher.args[7]":                   3,
	}
	for path, want := range cases {
		if got := fieldLine(doc, path); got != want {
			t.Errorf("fieldLine(%q) = %d, want %d", path, got, want)
		}
	}
}

// TestMergeKeepsCommentsAndOrder checks the merge on its own: the result
// holds exactly the new value, in the old order, with old comments.
func TestMergeKeepsCommentsAndOrder(t *testing.T) {
	old := "# head\nb: 1 # keep b\na:\n  # about x\n  x: [1, 2]\n  y: gone\nc: 0x10\n"
	newJSON := `{"a":{"x":[1,3],"z":"new"},"b":1,"c":16,"d":"true"}`
	doc, err := parseDocument([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	nn, err := jsonNode([]byte(newJSON))
	if err != nil {
		t.Fatal(err)
	}
	doc.Content[0] = mergeNode(doc.Content[0], nn)
	out, err := encodeDocument(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, want := range []string{"# head", "# keep b", "# about x", "c: 0x10", `d: "true"`} {
		if !strings.Contains(text, want) {
			t.Errorf("merged file lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "b: 1") > strings.Index(text, "a:") || strings.Contains(text, "y: gone") {
		t.Errorf("order or removal wrong:\n%s", text)
	}
	assertYAMLEqualsJSON(t, out, newJSON)
}

func assertYAMLEqualsJSON(t *testing.T, yml []byte, js string) {
	t.Helper()
	doc, err := parseDocument(yml)
	if err != nil {
		t.Fatalf("merged output does not parse: %v\n%s", err, yml)
	}
	got, err := nodeValue(doc, "")
	if err != nil {
		t.Fatal(err)
	}
	gj, _ := json.Marshal(got)
	var a, b any
	_ = json.Unmarshal(gj, &a)
	_ = json.Unmarshal([]byte(js), &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("merged value %s, want %s\n%s", gj, js, yml)
	}
}

// FuzzMergeNode checks, for any two JSON objects, that merging the
// second into a YAML rendering of the first yields exactly the second:
// keeping comments and spelling never changes the value.
func FuzzMergeNode(f *testing.F) {
	f.Add(`{"a":1,"b":[1,2]}`, `{"b":[2],"c":"x"}`)
	f.Add(`{"s":"yes","n":null}`, `{"s":"no","t":"123","u":"null","v":"2024-01-01"}`)
	f.Add(`{"m":{"k":"v"}}`, `{"m":[],"l":"a\nb"}`)
	f.Fuzz(func(t *testing.T, oldJSON, newJSON string) {
		var ov, nv map[string]any
		if json.Unmarshal([]byte(oldJSON), &ov) != nil || json.Unmarshal([]byte(newJSON), &nv) != nil || ov == nil || nv == nil {
			return
		}
		oj, _ := json.Marshal(ov)
		nj, _ := json.Marshal(nv)
		on, err := jsonNode(oj)
		if err != nil {
			return
		}
		oldYAML, err := encodeDocument(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{on}})
		if err != nil {
			return
		}
		doc, err := parseDocument(oldYAML)
		if err != nil {
			t.Fatalf("a rendered JSON object does not parse back: %v\n%s", err, oldYAML)
		}
		nn, err := jsonNode(nj)
		if err != nil {
			t.Fatal(err)
		}
		doc.Content[0] = mergeNode(doc.Content[0], nn)
		out, err := encodeDocument(doc)
		if err != nil {
			t.Fatal(err)
		}
		assertYAMLEqualsJSON(t, out, string(nj))
	})
}

// FuzzParseDocument feeds arbitrary bytes to the strict reader: it may
// refuse, but never panic, and what it accepts is plain JSON data.
func FuzzParseDocument(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: X\nspec: {a: [1, 2.5, true, null]}\n"))
	f.Add([]byte("a: &x 1\nb: *x\n"))
	f.Add([]byte("? [a]\n: b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := parseDocument(data)
		if err != nil {
			return
		}
		v, err := nodeValue(doc, "")
		if err != nil {
			return
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("accepted value is not JSON: %v", err)
		}
	})
}

func TestFileNames(t *testing.T) {
	cases := map[string][2]bool{ // name: {object file, stale temp}
		"notes.yaml":                       {true, false},
		".notes.yaml.swp":                  {false, false},
		"notes.yaml~":                      {false, false},
		".yaml":                            {false, false},
		"4913":                             {false, false},
		".notes.yaml.tmp-0123456789abcdef": {false, true},
		"..resourceversion.tmp-0011":       {false, true},
		".other.tmp-0011":                  {false, false},
	}
	for name, want := range cases {
		if got := isObjectFileName(name); got != want[0] {
			t.Errorf("isObjectFileName(%q) = %v", name, got)
		}
		if got := isStaleTemp(name); got != want[1] {
			t.Errorf("isStaleTemp(%q) = %v", name, got)
		}
	}
}

func TestSymlinksAndFIFOsAreRefused(t *testing.T) {
	s := openStore(t, "")
	secret := t.TempDir() + "/secret.yaml"
	writeFile(t, secret, "spec:\n  launcher:\n    command: leaked\n")
	dir := s.Dir() + "/walls.addonwall.dev/addonwalls/host1"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, dir+"/link.yaml"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the symlink to be refused", func() bool {
		ps := s.Problems()
		return len(ps) == 1 && strings.Contains(ps[0].Message, "symbolic link")
	})
	walls := func() int {
		var l wallsv1.AddonWallList
		if err := s.Client().List(ctxT(t), &l); err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	if n := walls(); n != 0 {
		t.Fatalf("a symlinked file was loaded (%d objects)", n)
	}
	// Positive control: the same content as a regular file loads.
	data, _ := os.ReadFile(secret)
	writeFile(t, dir+"/regular.yaml", string(data))
	eventually(t, "the regular file to load", func() bool { return walls() == 1 })
}
