package crowhome

import (
	"reflect"
	"testing"
)

func TestReadProfiles(t *testing.T) {
	checkout := t.TempDir()
	file := writeFile(t, checkout, "registry/addon-profiles.json", readTestdata(t, "addon-profiles.json"), 0o644)
	if file != ProfilesPath(checkout) {
		t.Fatalf("ProfilesPath = %s", ProfilesPath(checkout))
	}
	got, err := ReadProfiles(file)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]AddonProfile{
		"funkwhale":      {CrowDb: true, Storage: true, FirstParty: true},
		"knowledge-base": {CrowDb: true, FirstParty: true},
		"weather":        {},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v", got)
	}
}

func TestReadProfilesBad(t *testing.T) {
	const file = "/c/registry/addon-profiles.json"
	full := `"crowDb": true, "storage": false, "firstParty": true`
	cases := []struct{ name, doc, key, msg string }{
		{"unknown key", `{"kb": {` + full + `, "notes": "x"}}`, `["kb"].notes`, "not a known key"},
		{"case-variant key", `{"kb": {"crowdb": true, "storage": false, "firstParty": true}}`, `["kb"].crowdb`, "case-sensitive"},
		{"case-variant duplicate", `{"kb": {` + full + `, "CrowDb": false}}`, `["kb"].CrowDb`, "letter case"},
		{"duplicate key", `{"kb": {` + full + `, "crowDb": false}}`, `["kb"].crowDb`, "duplicate key"},
		{"duplicate id", `{"kb": {` + full + `}, "kb": {` + full + `}}`, `["kb"]`, "duplicate key"},
		{"missing field", `{"kb": {"crowDb": true, "storage": false}}`, `["kb"].firstParty`, "is missing"},
		{"string for bool", `{"kb": {"crowDb": "true", "storage": false, "firstParty": true}}`, `["kb"].crowDb`, "must be a boolean, not a string"},
		{"null for bool", `{"kb": {"crowDb": null, "storage": false, "firstParty": true}}`, `["kb"].crowDb`, "must be a boolean, not null"},
		{"bad id", `{"../kb": {` + full + `}}`, `["../kb"]`, "not an add-on id"},
		{"entry a list", `{"kb": [true]}`, `["kb"]`, "must be an object"},
		{"not an object", `[]`, ``, "must be an object, not a list"},
		{"trailing data", `{} []`, ``, "data after the end"},
		{"NUL escaped in a key", `{"k\u0000b": {` + full + `}}`, `["k\x00b"]`, "NUL character"},
		{"not UTF-8", "{\"k\xffb\": {" + full + "}}", "[\"k\uFFFDb\"]", "not UTF-8"},
		{"depth 65", `{"kb": ` + nested(MaxDepth) + `}`, `["kb"]` + repeatStr(".a", MaxDepth-1), "deeper than 64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseProfiles(file, []byte(tc.doc))
			wantFileError(t, err, file, tc.key, tc.msg)
		})
	}
	if _, err := parseProfiles(file, []byte(`{"kb": {`+full+`}}`)); err != nil {
		t.Fatalf("positive control: %v", err)
	}
}

func repeatStr(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}
