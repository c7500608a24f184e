package plan

import (
	"slices"
	"strings"
	"testing"
)

const (
	tEntry = "/opt/addonwall/bin/addonwall"
	tRelay = tCrow + "/addonwall/relay/r1"
)

// withEntry gives the fixture an entry: the binary root-owned in /opt and
// a fresh 0700 relay folder in the controller's own folder, which is a
// never-bind path like the rest of the Crow home.
func withEntry(in *Input) {
	bin := fileFacts(tEntry)
	bin.UID, bin.Mode = 0, 0o755
	relay := dirFacts(tRelay)
	relay.Mode = 0o700
	in.ControllerPaths = []string{tCrow + "/addonwall"}
	in.Entry = &EntryInput{
		Binary:   bin,
		Chain:    []PathFacts{rootDir("/"), rootDir("/opt"), rootDir("/opt/addonwall"), rootDir("/opt/addonwall/bin")},
		Args:     []string{"wall-entry", "--config", EntryConfigPath},
		Config:   []byte(`{"relaySocket":"/run/addonwall/relay/relay.sock","proxyPort":39080}`),
		RelayDir: relay,
	}
}

func mountAt(p *Plan, dest string) *Mount {
	for i := range p.Mounts {
		if p.Mounts[i].Dest == dest {
			return &p.Mounts[i]
		}
	}
	return nil
}

func TestBuildEntry(t *testing.T) {
	entry := func(f func(in *Input)) func(in *Input) {
		return func(in *Input) {
			withEntry(in)
			f(in)
		}
	}
	moveBinary := func(path string, uid, mode uint32) func(in *Input) {
		return entry(func(in *Input) {
			f := fileFacts(path)
			f.UID, f.Mode = uid, mode
			in.Entry.Binary = f
			in.Entry.Chain = []PathFacts{rootDir("/")}
			dir := "/"
			for _, e := range strings.Split(strings.TrimPrefix(path, "/"), "/")[:strings.Count(path, "/")-1] {
				dir = join(dir, e)
				in.Entry.Chain = append(in.Entry.Chain, rootDir(dir))
			}
		})
	}
	moveRelay := func(path string, uid, mode uint32) func(in *Input) {
		return entry(func(in *Input) {
			f := dirFacts(path)
			f.UID, f.Mode = uid, mode
			in.Entry.RelayDir = f
		})
	}
	runRows(t, []row{
		{name: "no entry: the add-on's command runs alone", check: func(p *Plan) string {
			if p.Entry != nil || !slices.Equal(p.Argv(), append([]string{p.Command}, p.Args...)) {
				return "a plan without an entry runs something else: " + strings.Join(p.Argv(), " ")
			}
			return expect(EntryPath, "", RelayDirPath, "")(p)
		}},
		{name: "entry, its config and the relay folder are bound read-only at their places", mutate: withEntry, check: func(p *Plan) string {
			want := []string{EntryPath, "wall-entry", "--config", EntryConfigPath, "--", "/usr/bin/node", "server/index.js"}
			if !slices.Equal(p.Argv(), want) {
				return "argv " + strings.Join(p.Argv(), " ")
			}
			if m := mountAt(p, EntryPath); m == nil || m.Kind != RoBindFd || m.Source != tEntry {
				return "the entry is not bound read-only from its binary"
			}
			if m := mountAt(p, RelayDirPath); m == nil || m.Kind != RoBindFd || m.Source != tRelay {
				return "the relay folder is not bound read-only"
			}
			if m := mountAt(p, EntryConfigPath); m == nil || m.Kind != RoBindData || !strings.Contains(string(m.Data), "39080") {
				return "the config is not bound as data"
			}
			// The relay folder is the one exception inside the
			// controller's folder: the rest of it stays unbound.
			return expect(tCrow+"/addonwall", "", tCrow+"/addonwall/relay/r2", "")(p)
		}},
		{name: "entry owned by the wall's uid is accepted", mutate: moveBinary("/opt/aw/addonwall", tUID, 0o755), check: expect(EntryPath, "ro-bind-fd")},
		{name: "entry under /tmp is refused", mutate: moveBinary("/tmp/go-build1/addonwall", 0, 0o755), wantErr: "under a host folder"},
		{name: "entry in the Crow home is refused", mutate: moveBinary(tCrow+"/bin/addonwall", 0, 0o755), wantErr: "never binds"},
		{name: "entry in a write grant is refused", mutate: func(in *Input) {
			moveBinary("/srv/share/addonwall", 0, 0o755)(in)
			in.Profile.Write = []Grant{{Field: "SHARE", Value: "/srv/share", OwnerTyped: true, Facts: dirFacts("/srv/share")}}
			in.Scans["/srv/share"] = scan("/srv/share")
		}, wantErr: "can write"},
		{name: "entry owned by another user is refused", mutate: moveBinary("/opt/aw/addonwall", 1001, 0o755), wantErr: "belongs to uid 1001"},
		{name: "group-writable entry is refused", mutate: moveBinary("/opt/aw/addonwall", 0, 0o775), wantErr: "writable by its group"},
		{name: "entry named by a symlink is refused", mutate: entry(func(in *Input) {
			in.Entry.Binary = linkFacts("/usr/local/bin/addonwall", tEntry, tEntry, KindFile)
		}), wantErr: "name the real path"},
		{name: "entry without a config is refused", mutate: entry(func(in *Input) { in.Entry.Config = nil }), wantErr: "config is missing"},
		{name: "entry argument with a NUL is refused", mutate: entry(func(in *Input) { in.Entry.Args = []string{"wall-entry\x00x"} }), wantErr: "NUL"},
		{name: "relay folder open to others is refused", mutate: moveRelay(tRelay, tUID, 0o755), wantErr: "0700"},
		{name: "relay folder of another uid is refused", mutate: moveRelay(tRelay, 0, 0o700), wantErr: "not the wall's uid"},
		{name: "relay folder under /run is refused", mutate: moveRelay("/run/user/1000/relay", tUID, 0o700), wantErr: "host folder"},
		{name: "relay folder inside the add-on's data folder is refused", mutate: moveRelay(tFolder+"/relay", tUID, 0o700), wantErr: "overlaps"},
		{name: "relay folder that is a symlink is refused", mutate: entry(func(in *Input) {
			in.Entry.RelayDir = linkFacts(tRelay, "/srv/elsewhere", "/srv/elsewhere", KindDir)
		}), wantErr: "own real path"},
	})
}

// A plan with an entry, broken after Build, must not validate; the plan
// as built is the positive control.
func TestValidateEntry(t *testing.T) {
	cases := []struct {
		name    string
		breakIt func(p *Plan)
		wantErr string
	}{
		{name: "unbroken plan validates"},
		{name: "relay folder bound writable", breakIt: func(p *Plan) { mountAt(p, RelayDirPath).Kind = Bind }, wantErr: "read-only by fd"},
		{name: "entry from another file", breakIt: func(p *Plan) { mountAt(p, EntryPath).Source = "/opt/other" }, wantErr: "must be " + tEntry},
		{name: "relay folder swapped for the Crow home", breakIt: func(p *Plan) {
			mountAt(p, RelayDirPath).Source = tCrow
			p.Entry.RelayDir = tCrow
		}, wantErr: "holds " + tCrow},
		{name: "relay folder swapped for the add-on's data folder", breakIt: func(p *Plan) {
			mountAt(p, RelayDirPath).Source = tFolder
			p.Entry.RelayDir = tFolder
		}, wantErr: "overlaps"},
		{name: "entry binary moved into the Crow home", breakIt: func(p *Plan) {
			mountAt(p, EntryPath).Source = tCrow + "/addonwall/bin"
			p.Entry.Binary = tCrow + "/addonwall/bin"
		}, wantErr: "never bound"},
		{name: "relay folder moved under /run", breakIt: func(p *Plan) {
			mountAt(p, RelayDirPath).Source = "/run/user/0/r"
			p.Entry.RelayDir = "/run/user/0/r"
		}, wantErr: "host folder"},
		{name: "something else placed beside the entry", breakIt: func(p *Plan) {
			p.Mounts = append(p.Mounts, Mount{Kind: RoBindFd, Source: "/srv/crow", Dest: EntryDir + "/x", Anchor: "/", Expect: newID(), ExpectKind: KindDir})
		}, wantErr: "nothing but the entry"},
		{name: "relay folder mounted twice", breakIt: func(p *Plan) { p.Mounts = append(p.Mounts, *mountAt(p, RelayDirPath)) }, wantErr: "exactly once"},
		{name: "config dropped", breakIt: func(p *Plan) {
			m := mountAt(p, EntryConfigPath)
			m.Kind, m.Data = Tmpfs, nil
		}, wantErr: "fixed data"},
		{name: "entry mounts without an entry", breakIt: func(p *Plan) { p.Entry = nil }, wantErr: "has no entry"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := baseInput()
			withEntry(&in)
			p := mustBuild(t, in)
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

// Every spawn has a relay folder of its own; the hash, which status shows,
// must not change with it, and must change with the entry's binary.
func TestHashEntry(t *testing.T) {
	in := baseInput()
	withEntry(&in)
	a := mustBuild(t, in)
	relay := dirFacts(tCrow + "/addonwall/relay/r2")
	relay.Mode = 0o700
	in.Entry.RelayDir = relay
	b := mustBuild(t, in)
	if a.Hash() != b.Hash() {
		t.Fatal("a new relay folder changed the hash")
	}
	if mountAt(a, RelayDirPath).Source == mountAt(b, RelayDirPath).Source {
		t.Fatal("the two plans must differ in their relay folder for this test to mean anything")
	}
	in.Entry.Binary.ID = newID()
	if mustBuild(t, in).Hash() == a.Hash() {
		t.Fatal("a new entry binary did not change the hash")
	}
	plain := mustBuild(t, baseInput())
	if plain.Hash() == a.Hash() {
		t.Fatal("a plan with an entry hashes like one without")
	}
}
