package plan

import (
	"strings"
	"testing"
)

// Validate is checked on plans broken after Build, so that a hand-made or
// corrupted plan cannot reach bubblewrap. The unbroken plan is the positive
// control.
func TestValidate(t *testing.T) {
	cases := []struct {
		name    string
		breakIt func(p *Plan)
		wantErr string
	}{
		{name: "unbroken plan validates"},
		{name: "shared network", breakIt: func(p *Plan) { p.Namespaces.Net = false }, wantErr: "unshares every namespace"},
		{name: "nested user namespaces allowed", breakIt: func(p *Plan) { p.Namespaces.DisableUserns = false }, wantErr: "unshares every namespace"},
		{name: "writable bind without an fd anchor", breakIt: func(p *Plan) {
			for i := range p.Mounts {
				if p.Mounts[i].Kind == Bind {
					p.Mounts[i].Anchor = ""
				}
			}
		}, wantErr: "trusted folder"},
		{name: "fd bind that names no file", breakIt: func(p *Plan) {
			for i := range p.Mounts {
				if p.Mounts[i].Kind == Bind {
					p.Mounts[i].Expect = FileID{}
				}
			}
		}, wantErr: "does not name the file"},
		{name: "path bind outside the system folders", breakIt: func(p *Plan) {
			p.Mounts = append(p.Mounts, Mount{Kind: RoBind, Source: "/srv/x", Dest: "/srv/x", ExpectKind: KindDir})
		}, wantErr: "only for system folders"},
		{name: "host bind of the Crow home", breakIt: func(p *Plan) {
			p.Mounts = append(p.Mounts, Mount{Kind: RoBindFd, Source: tCrow, Dest: tCrow, Anchor: "/", Expect: newID(), ExpectKind: KindDir})
		}, wantErr: "never bound"},
		{name: "host bind that shows the data dir from above", breakIt: func(p *Plan) {
			p.Mounts = append(p.Mounts, Mount{Kind: RoBindFd, Source: "/home/u", Dest: "/home/u", Anchor: "/", Expect: newID(), ExpectKind: KindDir})
		}, wantErr: "shows it"},
		{name: "bind of /run", breakIt: func(p *Plan) {
			p.Mounts = append(p.Mounts, Mount{Kind: RoBindFd, Source: "/run/user/1000", Dest: "/run/user/1000", Anchor: "/", Expect: newID(), ExpectKind: KindDir})
		}, wantErr: "sockets"},
		{name: "bind of a .env that is not the own one", breakIt: func(p *Plan) {
			p.Mounts = append(p.Mounts, Mount{Kind: RoBindFd, Source: "/srv/crow/.env", Dest: "/srv/crow/.env", Anchor: "/", Expect: newID(), ExpectKind: KindFile})
		}, wantErr: "secrets file"},
		{name: "bind at another path than its source", breakIt: func(p *Plan) {
			p.Mounts = append(p.Mounts, Mount{Kind: RoBindFd, Source: "/srv/crow", Dest: "/x", Anchor: "/", Expect: newID(), ExpectKind: KindDir})
		}, wantErr: "own real path"},
		{name: "remount of nothing", breakIt: func(p *Plan) {
			p.Mounts = append(p.Mounts, Mount{Kind: RemountRo, Dest: "/nothing"})
		}, wantErr: "not an earlier tmpfs"},
		{name: "NUL in an argument", breakIt: func(p *Plan) { p.Args = []string{"a\x00b"} }, wantErr: "NUL"},
		{name: "proxy variable overridden", breakIt: func(p *Plan) { p.Env["HTTPS_PROXY"] = "http://evil:3128" }, wantErr: "wall's own proxy"},
		{name: "working folder not bound", breakIt: func(p *Plan) { p.Chdir = "/srv/elsewhere" }, wantErr: "not bound read-only"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := mustBuild(t, baseInput())
			if c.breakIt != nil {
				c.breakIt(p)
			}
			err := p.Validate()
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Validate = %v, want %q", err, c.wantErr)
			}
		})
	}
}

func TestHash(t *testing.T) {
	in := baseInput()
	a := mustBuild(t, in)
	b := mustBuild(t, in)
	if a.Hash() != b.Hash() || !strings.HasPrefix(a.Hash(), "sha256:") {
		t.Fatalf("hash not stable: %s %s", a.Hash(), b.Hash())
	}
	in.Env.Own = []EnvVar{{Name: "TOKEN", Value: "one", OwnerTyped: true}}
	c := mustBuild(t, in)
	in.Env.Own[0].Value = "two"
	d := mustBuild(t, in)
	if c.Hash() != d.Hash() {
		t.Fatal("an env value changed the hash; values must stay out of it")
	}
	if c.Hash() == a.Hash() {
		t.Fatal("a new env name did not change the hash")
	}
	if strings.Contains(c.Hash(), "one") {
		t.Fatal("hash shows a value")
	}
	in.Command.Args = []string{"other.js"}
	if mustBuild(t, in).Hash() == c.Hash() {
		t.Fatal("changed args did not change the hash")
	}
}

// A crowDb plan whose mask over another entry of the data folder is dropped
// must not validate; the plan as built is the positive control.
func TestValidateCrowDBMasks(t *testing.T) {
	in := baseInput()
	in.Profile.CrowDB = true
	in.Profile.DataDirEntries = []DirEntry{{Name: "crow.db", Kind: KindFile}, {Name: "tasks.db", Kind: KindFile}}
	p := mustBuild(t, in)
	if err := p.Validate(); err != nil {
		t.Fatalf("positive control: %v", err)
	}
	var kept []Mount
	for _, m := range p.Mounts {
		if m.Dest != tData+"/tasks.db" {
			kept = append(kept, m)
		}
	}
	p.Mounts = kept
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "tasks.db is never bound") {
		t.Fatalf("Validate = %v", err)
	}
}
