package crowhome

import (
	"errors"
	"strings"
	"testing"
)

// Every fuzz target checks the same two things: no panic, and every error
// (whole-file or confined to one entry) is a *FileError naming the file.

const fuzzFile = "/fuzz/in.json"

func checkFileError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("error is %T, not *FileError: %v", err, err)
	}
	if fe.File != fuzzFile || !strings.HasPrefix(err.Error(), fuzzFile+": ") || fe.Msg == "" {
		t.Fatalf("error does not name the file: %v", err)
	}
}

func FuzzReadAddons(f *testing.F) {
	f.Add(readTestdata(f, "mcp-addons.json"))
	f.Add([]byte(`{"kb": {"command": "node", "env": {"A": "1", "a": "2"}}, "KB": {}}`))
	f.Add([]byte(`{"x": {"command": "a\u0000b", "args": ["\ud800"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseAddons(fuzzFile, data)
		checkFileError(t, err)
		if err != nil {
			return
		}
		for id, e := range got.Entries {
			if ValidID(id) != nil {
				t.Fatalf("entry with a bad id %q", id)
			}
			if _, bad := got.Problems[id]; bad {
				t.Fatalf("id %q is both good and bad", id)
			}
			for _, k := range e.Env.Keys() {
				if ValidEnvName(k) != nil {
					t.Fatalf("bad env name %q", k)
				}
			}
			for _, s := range append(append([]string{e.Command, e.Cwd, e.URL}, e.Args...), e.Env.Keys()...) {
				if strings.IndexByte(s, 0) >= 0 {
					t.Fatalf("a NUL got through")
				}
			}
		}
		for _, fe := range got.Problems {
			checkFileError(t, fe)
		}
		for _, fe := range got.BadKeys {
			checkFileError(t, fe)
		}
	})
}

func FuzzReadManifest(f *testing.F) {
	f.Add(readTestdata(f, "manifest-funkwhale.json"))
	f.Add([]byte(`{"id": "a", "network": {"hosts": ["H"]}, "sandbox": {"files": {"oauthDir": "T"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseManifest(fuzzFile, data)
		checkFileError(t, err)
		if err == nil && ValidID(m.ID) != nil {
			t.Fatalf("manifest with a bad id %q", m.ID)
		}
	})
}

func FuzzReadProfiles(f *testing.F) {
	f.Add(readTestdata(f, "addon-profiles.json"))
	f.Add([]byte(`{"kb": {"crowDb": true, "storage": false, "firstParty": true}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseProfiles(fuzzFile, data)
		checkFileError(t, err)
		for id := range got {
			if ValidID(id) != nil {
				t.Fatalf("profile with a bad id %q", id)
			}
		}
	})
}

func FuzzReadWalls(f *testing.F) {
	f.Add(readTestdata(f, "addon-walls.json"))
	f.Add([]byte(`{"version": 1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := parseWalls(fuzzFile, data)
		checkFileError(t, err)
		if err != nil {
			return
		}
		for id, c := range w.Addons {
			if ValidID(id) != nil || !c.Choice.valid() {
				t.Fatalf("bad line %q %+v", id, c)
			}
		}
		// What was read must encode and read back the same.
		out, err := encodeWalls(w)
		if err != nil {
			t.Fatal(err)
		}
		back, err := parseWalls(fuzzFile, out)
		if err != nil {
			t.Fatalf("our own encoding does not read back: %v\n%s", err, out)
		}
		if len(back.Addons) != len(w.Addons) || len(back.Announced) != len(w.Announced) {
			t.Fatalf("round trip lost content")
		}
		for id, c := range w.Addons {
			if b := back.Addons[id]; b.Choice != c.Choice || !b.ChangedAt.Equal(c.ChangedAt) {
				t.Fatalf("round trip changed %s", id)
			}
		}
	})
}

func FuzzCompose(f *testing.F) {
	f.Add(readTestdata(f, "docker-compose.yml"), "FUNKWHALE_NGINX_BIND_PORT", "8700")
	f.Add([]byte(composeWith(`"${A:-${B:-127.0.0.1}}:${P-1}:80/udp"`, "target: 80\n        published: 8000-8001")), "A", "")
	f.Add([]byte("a: &a [*a]\nservices:\n  s:\n    <<: *a\n"), "", "")
	f.Fuzz(func(t *testing.T, data []byte, key, value string) {
		c, err := parseCompose(fuzzFile, data, map[string]string{key: value})
		checkFileError(t, err)
		if err != nil {
			return
		}
		for _, fe := range c.Problems {
			checkFileError(t, fe)
		}
		for _, p := range c.Ports {
			if p.ContainerPort < 1 || p.ContainerPort > 65535 || p.HostPort < 0 || p.HostPort > 65535 {
				t.Fatalf("bad port %+v", p)
			}
			if p.Protocol != "tcp" && p.Protocol != "udp" && p.Protocol != "sctp" {
				t.Fatalf("bad protocol %+v", p)
			}
			if p.HostIP == "" && !p.AllAddresses {
				t.Fatalf("no address but not all addresses: %+v", p)
			}
		}
	})
}
