package crowhome

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadManifestFunkwhale(t *testing.T) {
	home := t.TempDir()
	file := writeFile(t, home, "bundles/funkwhale/manifest.json", readTestdata(t, "manifest-funkwhale.json"), 0o644)
	if file != ManifestPath(home, "funkwhale") {
		t.Fatalf("ManifestPath = %s", ManifestPath(home, "funkwhale"))
	}
	m, err := ReadManifest(file, "funkwhale")
	if err != nil {
		t.Fatal(err)
	}
	want := &Manifest{
		ID:   "funkwhale",
		Name: "Funkwhale",
		Server: &ManifestServer{Command: "node", Args: []string{"server/index.js"},
			EnvKeys: []string{"FUNKWHALE_URL", "FUNKWHALE_ACCESS_TOKEN", "FUNKWHALE_HOSTNAME"}},
		EnvVars: []EnvVar{
			{Name: "FUNKWHALE_HOSTNAME", Required: true},
			{Name: "FUNKWHALE_NGINX_BIND_ADDR", Default: "127.0.0.1", HasDefault: true},
			{Name: "FUNKWHALE_NGINX_BIND_PORT", Default: "8600", HasDefault: true},
			{Name: "FUNKWHALE_WORKERS", Default: "4", HasDefault: true},
			{Name: "FUNKWHALE_DJANGO_SECRET_KEY", Required: true, Secret: true},
			{Name: "FUNKWHALE_URL", Default: "http://crow-funkwhale", HasDefault: true},
			{Name: "FUNKWHALE_ACCESS_TOKEN", Secret: true},
		},
		ComposeFile: "docker-compose.yml",
		Sandbox: Sandbox{
			Declared:   true,
			Network:    Network{Internet: true, Hosts: []string{"FUNKWHALE_URL"}},
			Files:      Files{Read: []string{"FUNKWHALE_MUSIC_DIR"}, Write: []string{"FUNKWHALE_UPLOAD_DIR"}, OAuthDir: "FUNKWHALE_TOKEN_FILE"},
			OwnEnvFile: true,
			Doors:      "funkwhale",
		},
	}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got  %+v\nwant %+v", m, want)
	}
	if got := m.ComposePath("/i"); got != "/i/docker-compose.yml" {
		t.Errorf("ComposePath = %s", got)
	}

	_, err = ReadManifest(file, "media")
	wantFileError(t, err, file, "id", `is not "media"`)

	_, err = ReadManifest(filepath.Join(home, "bundles/none/manifest.json"), "none")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing manifest must be fs.ErrNotExist, got %v", err)
	}
}

func TestManifestNetworkForms(t *testing.T) {
	cases := []struct {
		name, doc string
		want      Sandbox
	}{
		{"no sandbox", `{"id": "a"}`, Sandbox{}},
		{"empty sandbox", `{"id": "a", "sandbox": {}}`, Sandbox{Declared: true}},
		{"none", `{"id": "a", "sandbox": {"network": "none"}}`, Sandbox{Declared: true}},
		{"internet", `{"id": "a", "sandbox": {"network": "internet"}}`, Sandbox{Declared: true, Network: Network{Internet: true}}},
		{"hosts only", `{"id": "a", "sandbox": {"network": {"hosts": ["A_HOST", "B_HOST"]}}}`, Sandbox{Declared: true, Network: Network{Hosts: []string{"A_HOST", "B_HOST"}}}},
		{"internet false", `{"id": "a", "sandbox": {"network": {"internet": false}}}`, Sandbox{Declared: true}},
		{"seed spelling: top-level network", `{"id": "a", "network": {"internet": true, "hosts": ["H"]}, "sandbox": {"ownEnvFile": false}}`,
			Sandbox{Declared: true, Network: Network{Internet: true, Hosts: []string{"H"}}}},
		{"seed spelling without a sandbox section", `{"id": "a", "network": "internet"}`, Sandbox{Declared: true, Network: Network{Internet: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := parseManifest("m.json", []byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m.Sandbox, tc.want) {
				t.Errorf("got %+v, want %+v", m.Sandbox, tc.want)
			}
		})
	}
}

func TestManifestBad(t *testing.T) {
	const file = "/b/kb/manifest.json"
	cases := []struct{ name, doc, key, msg string }{
		{"sandbox unknown key", `{"id": "a", "sandbox": {"netwrok": "none"}}`, `sandbox.netwrok`, "not a known key"},
		{"sandbox case-variant key", `{"id": "a", "sandbox": {"Network": "internet"}}`, `sandbox.Network`, "case-sensitive"},
		{"sandbox duplicate key", `{"id": "a", "sandbox": {"network": "none", "network": "internet"}}`, `sandbox.network`, "duplicate key"},
		{"sandbox null", `{"id": "a", "sandbox": null}`, `sandbox`, "must be an object, not null"},
		{"sandbox a string", `{"id": "a", "sandbox": "on"}`, `sandbox`, "must be an object, not a string"},
		{"files unknown key", `{"id": "a", "sandbox": {"files": {"read": [], "exec": ["X"]}}}`, `sandbox.files.exec`, "not a known key"},
		{"network unknown word", `{"id": "a", "sandbox": {"network": "all"}}`, `sandbox.network`, `"none", "internet"`},
		{"network unknown key", `{"id": "a", "sandbox": {"network": {"internet": true, "ports": [1]}}}`, `sandbox.network.ports`, "not a known key"},
		{"network internet not bool", `{"id": "a", "sandbox": {"network": {"internet": "yes"}}}`, `sandbox.network.internet`, "must be a boolean"},
		{"network a number", `{"id": "a", "sandbox": {"network": 1}}`, `sandbox.network`, "not a number"},
		{"host not an env name", `{"id": "a", "sandbox": {"network": {"hosts": ["api.example.com:443"]}}}`, `sandbox.network.hosts[0]`, "not an environment variable name"},
		{"host listed twice", `{"id": "a", "sandbox": {"network": {"hosts": ["H", "H"]}}}`, `sandbox.network.hosts[1]`, "second time"},
		{"read not a list", `{"id": "a", "sandbox": {"files": {"read": "HOME_DIR"}}}`, `sandbox.files.read`, "must be a list"},
		{"write entry a path", `{"id": "a", "sandbox": {"files": {"write": ["/home/u"]}}}`, `sandbox.files.write[0]`, "not an environment variable name"},
		{"oauthDir a list", `{"id": "a", "sandbox": {"files": {"oauthDir": ["T"]}}}`, `sandbox.files.oauthDir`, "must be a string"},
		{"ownEnvFile a string", `{"id": "a", "sandbox": {"ownEnvFile": "true"}}`, `sandbox.ownEnvFile`, "must be a boolean"},
		{"doors a path", `{"id": "a", "sandbox": {"doors": "../kiosk"}}`, `sandbox.doors`, "not an add-on id"},
		{"both network spellings", `{"id": "a", "network": "none", "sandbox": {"network": "internet"}}`, `network`, "both here and as sandbox.network"},
		{"top-level network null", `{"id": "a", "network": null}`, `network`, "not null"},
		{"no id", `{"name": "x"}`, `id`, "is missing"},
		{"bad id", `{"id": "../etc"}`, `id`, "not an add-on id"},
		{"id a number", `{"id": 7}`, `id`, "must be a string"},
		{"case-variant top key", `{"id": "a", "ID": "b"}`, `ID`, "letter case"},
		{"case-variant of a known key alone", `{"id": "a", "Sandbox": {"network": "internet"}}`, `Sandbox`, "case-sensitive"},
		{"default an object", `{"id": "a", "env_vars": [{"name": "X", "default": {"a": 1}}]}`, `env_vars[0].default`, "string, number or boolean"},
		{"env var name bad", `{"id": "a", "env_vars": [{"name": "X Y"}]}`, `env_vars[0].name`, "not an environment variable name"},
		{"env var declared twice", `{"id": "a", "env_vars": [{"name": "X"}, {"name": "X"}]}`, `env_vars[1].name`, "second time"},
		{"secret not bool", `{"id": "a", "env_vars": [{"name": "X", "secret": 1}]}`, `env_vars[0].secret`, "must be a boolean"},
		{"server without command", `{"id": "a", "server": {"args": []}}`, `server.command`, "is missing"},
		{"server envKeys bad", `{"id": "a", "server": {"command": "node", "envKeys": ["A", "B-C"]}}`, `server.envKeys[1]`, "not an environment variable name"},
		{"composefile escapes", `{"id": "a", "docker": {"composefile": "../other/docker-compose.yml"}}`, `docker.composefile`, "inside the bundle folder"},
		{"composefile absolute", `{"id": "a", "docker": {"composefile": "/etc/compose.yml"}}`, `docker.composefile`, "inside the bundle folder"},
		{"port too large", `{"id": "a", "port": 70000}`, `port`, "1 to 65535"},
		{"port a fraction", `{"id": "a", "port": 80.5}`, `port`, "whole number"},
		{"port a string", `{"id": "a", "port": "80"}`, `port`, "must be a number"},
		{"ports element zero", `{"id": "a", "ports": [80, 0]}`, `ports[1]`, "1 to 65535"},
		{"trailing data", `{"id": "a"} {"id": "b"}`, ``, "data after the end"},
		{"NUL escaped in a string Crow owns", `{"id": "a", "description": "x\u0000"}`, `description`, "NUL character"},
		{"depth 65", `{"id": "a", "x": ` + nested(MaxDepth) + `}`, `x` + strings.Repeat(".a", MaxDepth-1), "deeper than 64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseManifest(file, []byte(tc.doc))
			wantFileError(t, err, file, tc.key, tc.msg)
		})
	}
	// Positive controls beside the refusals: Crow's own unknown keys, nulls
	// in Crow's optional fields and a number default are fine.
	ok := `{"id": "a", "webUI": null, "server": null, "docker": null, "port": null, "capabilities": {"x": [1, {"y": null}]},
		"env_vars": [{"name": "X", "default": 8600, "generate": "secret", "description": "d"}, {"name": "Y", "default": true}, {"name": "Z", "default": null}]}`
	m, err := parseManifest(file, []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if m.Server != nil || m.ComposeFile != "" || m.Port != 0 || m.EnvVars[0].Default != "8600" || m.EnvVars[1].Default != "true" || m.EnvVars[2].HasDefault {
		t.Errorf("unexpected %+v", m)
	}
}
