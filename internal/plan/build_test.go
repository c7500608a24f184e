package plan

import (
	"strings"
	"testing"
)

type row struct {
	name    string
	mutate  func(in *Input)
	wantErr string             // substring of the refusal; empty means Build succeeds
	check   func(*Plan) string // returns what is wrong, or ""
}

func runRows(t *testing.T, rows []row) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			in := baseInput()
			if r.mutate != nil {
				r.mutate(&in)
			}
			p, err := Build(in)
			if r.wantErr != "" {
				if err == nil {
					t.Fatalf("Build succeeded; want an error containing %q", r.wantErr)
				}
				if !strings.Contains(err.Error(), r.wantErr) {
					t.Fatalf("error %q does not contain %q", err, r.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if r.check != nil {
				if msg := r.check(p); msg != "" {
					t.Fatal(msg)
				}
			}
		})
	}
}

// expect builds a check from (path, want) pairs: want is a mount kind, "host"
// (a host bind shows it), "hidden" (nothing from the host shows it) or "" (no
// mount at all).
func expect(pairs ...string) func(*Plan) string {
	return func(p *Plan) string {
		for i := 0; i+1 < len(pairs); i += 2 {
			path, want := pairs[i], pairs[i+1]
			got := shown(p, path)
			switch want {
			case "host":
				if !hostVisible(p, path) {
					return path + ": want a host bind showing it, got " + string(got)
				}
			case "hidden":
				if hostVisible(p, path) {
					return path + ": want it hidden, but " + string(got) + " shows the host's file"
				}
			default:
				if string(got) != want {
					return path + ": want " + want + ", got " + string(got)
				}
			}
		}
		return ""
	}
}

func TestBuildCode(t *testing.T) {
	runRows(t, []row{
		{name: "base plan binds code read-only by fd at real paths", check: func(p *Plan) string {
			if msg := expect(tInstall, "ro-bind-fd", tCheckout, "ro-bind-fd", "/usr/bin/node", "ro-bind",
				"/tmp", "tmpfs", "/proc", "proc", "/dev", "dev", "/etc/hosts", "ro-bind-data",
				"/etc/passwd", "ro-bind", "/etc/ssl/certs/x", "ro-bind")(p); msg != "" {
				return msg
			}
			if p.Chdir != tInstall || p.Command != "/usr/bin/node" || p.Args[0] != "server/index.js" {
				return "chdir/command wrong: " + p.Chdir + " " + p.Command
			}
			for _, m := range p.Mounts {
				if m.Dest == "/bin" && (m.Kind != Symlink || m.Source != "usr/bin") {
					return "/bin should be the usr/bin symlink"
				}
			}
			return ""
		}},
		{name: "host places and the rest of /etc are never shown", check: expect(
			"/run", "", "/var/run", "", "/dev/shm", "dev", "/etc/shadow", "", "/etc/ssl/private/k", "",
			"/etc/resolv.conf", "", "/home/u/.crow/mcp-addons.json", "", "/home/u/.ssh/id_rsa", "")},
		{name: "install folder that is a symlink is refused", mutate: func(in *Input) {
			in.Install = linkFacts(tInstall, "/srv/crow/bundles/demo", "/srv/crow/bundles/demo", KindDir)
		}, wantErr: "is a symlink"},
		{name: "install folder too large to scan is an error", mutate: func(in *Input) {
			s := in.Scans[tInstall]
			s.Incomplete = "more than 200000 entries"
			in.Scans[tInstall] = s
		}, wantErr: "cannot be bound"},
		{name: "checkout too large to scan is not bound and the plan says so", mutate: func(in *Input) {
			s := in.Scans[tCheckout]
			s.Incomplete = "more than 200000 entries"
			in.Scans[tCheckout] = s
		}, check: func(p *Plan) string {
			if hostVisible(p, tCheckout+"/server/x.js") {
				return "an unscanned checkout is bound"
			}
			if len(p.Unbound) != 1 || p.Unbound[0].Path != tCheckout {
				return "Unbound does not name the checkout"
			}
			return ""
		}},
		{name: "checkout inside the Crow home is refused", mutate: func(in *Input) {
			in.Checkout = dirFacts(tCrow + "/app")
			in.Scans[tCrow+"/app"] = scan(tCrow + "/app")
		}, wantErr: "which the wall never binds"},
		{name: "a checkout under /tmp is refused", mutate: func(in *Input) {
			in.Checkout = dirFacts("/tmp/crow")
			in.Scans["/tmp/crow"] = scan("/tmp/crow")
		}, wantErr: "sockets"},
		{name: "runtime under /opt is bound read-only by fd", mutate: func(in *Input) {
			in.Runtime = rootDir("/opt/node")
			in.Scans["/opt/node"] = scan("/opt/node")
			in.Command.Facts.Real = "/opt/node/bin/node"
		}, check: expect("/opt/node/bin/node", "ro-bind-fd")},
		{name: "runtime in a hidden home folder (~/.nvm) is refused", mutate: func(in *Input) {
			in.Runtime = dirFacts(tHome + "/.nvm/versions/node/v20")
			in.Scans[tHome+"/.nvm/versions/node/v20"] = scan(tHome + "/.nvm/versions/node/v20")
		}, wantErr: "never binds"},
		{name: "invalid add-on id is refused", mutate: func(in *Input) { in.AddonID = "../x" }, wantErr: "not valid"},
		{name: "checkout equal to the owner's home is refused", mutate: func(in *Input) {
			in.Checkout = dirFacts("/home")
			in.Scans["/home"] = scan("/home")
		}, wantErr: "whole home"},
	})
}

func TestBuildCommand(t *testing.T) {
	outside := func(path string, uid uint32, mode uint32) func(in *Input) {
		return func(in *Input) {
			f := fileFacts(path)
			f.UID, f.Mode = uid, mode
			in.Command.Facts = f
			in.Command.Chain = []PathFacts{rootDir("/")}
			dir := "/"
			for _, e := range strings.Split(strings.TrimPrefix(path, "/"), "/")[:strings.Count(path, "/")-1] {
				dir = join(dir, e)
				in.Command.Chain = append(in.Command.Chain, rootDir(dir))
			}
		}
	}
	runRows(t, []row{
		{name: "command outside the trees, root-owned, is bound read-only", mutate: outside("/opt/tool/bin/tool", 0, 0o755),
			check: expect("/opt/tool/bin/tool", "ro-bind-fd", "/opt/tool/bin/other", "")},
		{name: "command owned by the wall's uid outside the trees is bound read-only", mutate: outside("/opt/tool/bin/tool", tUID, 0o755),
			check: expect("/opt/tool/bin/tool", "ro-bind-fd")},
		{name: "command in its own data folder is refused", mutate: outside(tFolder+"/bin/server", tUID, 0o755), wantErr: "can write"},
		{name: "command under /tmp is refused", mutate: outside("/tmp/x/server", tUID, 0o755), wantErr: "can write"},
		{name: "command in a write grant is refused", mutate: func(in *Input) {
			outside("/srv/share/run", tUID, 0o755)(in)
			g := Grant{Field: "SHARE", Value: "/srv/share", OwnerTyped: true, Facts: dirFacts("/srv/share")}
			in.Profile.Write = []Grant{g}
			in.Scans["/srv/share"] = scan("/srv/share")
		}, wantErr: "can write"},
		{name: "command whose file is group-writable is refused", mutate: outside("/opt/tool/bin/tool", 0, 0o775), wantErr: "writable by its group"},
		{name: "command owned by another user is refused", mutate: outside("/opt/tool/bin/tool", 1001, 0o755), wantErr: "belongs to uid 1001"},
		{name: "command folder writable by everyone is refused", mutate: func(in *Input) {
			outside("/opt/tool/bin/tool", 0, 0o755)(in)
			in.Command.Chain[1].Mode = 0o777
		}, wantErr: "writable by its group or by everyone"},
		{name: "command inside the Crow home but not its own folders is refused", mutate: outside(tCrow+"/bin/tool", 0, 0o755), wantErr: "never binds"},
		{name: "command named .env is refused", mutate: outside("/opt/tool/.env", 0, 0o755), wantErr: "secrets file"},
		{name: "argument with a NUL is refused", mutate: func(in *Input) { in.Command.Args = []string{"x\x00--bind"} }, wantErr: "NUL"},
		{name: "command inside the install folder needs no extra bind", mutate: func(in *Input) {
			in.Command.Facts = fileFacts(tInstall + "/run.sh")
		}, check: func(p *Plan) string {
			for _, m := range p.Mounts {
				if m.Source == tInstall+"/run.sh" {
					return "command inside install bound again"
				}
			}
			return expect(tInstall+"/run.sh", "ro-bind-fd")(p)
		}},
	})
}

func TestBuildMasks(t *testing.T) {
	envDeep := node(tCheckout+"/a/b/c/.env", KindFile)
	runRows(t, []row{
		{name: ".env at any depth and .mcp.json are masked; their neighbours are not", mutate: func(in *Input) {
			addSensitive(in, tCheckout, envDeep)
			addSensitive(in, tCheckout, node(tCheckout+"/.mcp.json", KindFile))
			addSensitive(in, tInstall, node(tInstall+"/node_modules/x/.env", KindFile))
			addSensitive(in, tInstall, node(tInstall+"/.env.local", KindFile))
		}, check: expect(tCheckout+"/a/b/c/.env", "mask-file", tCheckout+"/a/b/c/readme", "host",
			tCheckout+"/.mcp.json", "mask-file", tInstall+"/node_modules/x/.env", "mask-file",
			tInstall+"/.env.local", "mask-file", tInstall+"/index.js", "host")},
		{name: "a .env that is a folder is masked with an empty folder", mutate: func(in *Input) {
			addSensitive(in, tCheckout, node(tCheckout+"/.env", KindDir))
		}, check: func(p *Plan) string {
			if msg := expect(tCheckout+"/.env/x", "mask-dir", tCheckout+"/y", "host")(p); msg != "" {
				return msg
			}
			last := p.Mounts[len(p.Mounts)-1]
			if last.Kind != RemountRo || last.Dest != tCheckout+"/.env" {
				return "the masking tmpfs is not remounted read-only last"
			}
			return ""
		}},
		{name: "shielded folders are masked in every bound tree", mutate: func(in *Input) {
			addSensitive(in, tCheckout, node(tCheckout+"/.ssh", KindDir))
			addSensitive(in, tCheckout, node(tCheckout+"/.ssh/id_rsa", KindFile))
			addSensitive(in, tFolder, node(tFolder+"/.aws", KindDir))
			addSensitive(in, tInstall, node(tInstall+"/.npmrc", KindFile))
		}, check: expect(tCheckout+"/.ssh/id_rsa", "mask-dir", tFolder+"/.aws/credentials", "mask-dir",
			tInstall+"/.npmrc", "mask-file", tFolder+"/notes", "bind-fd")},
		{name: "a hard link to a .env under another name is masked too", mutate: func(in *Input) {
			env := node(tCheckout+"/.env", KindFile)
			env.Nlink = 2
			addSensitive(in, tCheckout, env)
			alias := env
			alias.Path = tCheckout + "/docs/notes.txt"
			addLink(in, tCheckout, alias)
			other := node(tCheckout+"/docs/other.txt", KindFile)
			other.Nlink = 2
			other2 := other
			other2.Path = tCheckout + "/docs/other-copy.txt"
			addLink(in, tCheckout, other)
			addLink(in, tCheckout, other2)
		}, check: expect(tCheckout+"/docs/notes.txt", "mask-file", tCheckout+"/.env", "mask-file",
			tCheckout+"/docs/other.txt", "host", tCheckout+"/docs/other-copy.txt", "host")},
		{name: "a hard link in the data folder whose other name is outside every tree is masked", mutate: func(in *Input) {
			l := node(tFolder+"/stolen", KindFile)
			l.Nlink = 2
			addLink(in, tFolder, l)
		}, check: expect(tFolder+"/stolen", "mask-file", tFolder+"/own", "bind-fd")},
		{name: "a hard link across two bound trees is kept when every name is seen", mutate: func(in *Input) {
			l := node(tFolder+"/.venv/lib/x.py", KindFile)
			l.Nlink = 2
			l2 := l
			l2.Path = tFolder + "/.cache/uv/x.py"
			addLink(in, tFolder, l)
			addLink(in, tFolder, l2)
		}, check: expect(tFolder+"/.venv/lib/x.py", "bind-fd")},
		{name: "a symlink named .env is masked at its target", mutate: func(in *Input) {
			addSensitive(in, tCheckout, Node{Path: tCheckout + "/.env", Kind: KindSymlink, Target: tCheckout + "/config/prod.txt", TargetKind: KindFile, TargetID: newID()})
		}, check: expect(tCheckout+"/config/prod.txt", "mask-file", tCheckout+"/config/dev.txt", "host")},
		{name: "a symlink to a .env alias elsewhere in the trees masks the target", mutate: func(in *Input) {
			env := node(tInstall+"/.env", KindFile)
			addSensitive(in, tInstall, env)
			s := in.Scans[tCheckout]
			s.Symlinks = append(s.Symlinks, Node{Path: tCheckout + "/link", Kind: KindSymlink, Target: tInstall + "/.env", TargetKind: KindFile, TargetID: env.ID})
			in.Scans[tCheckout] = s
		}, check: expect(tInstall+"/.env", "mask-file")},
		{name: "sockets in a bound tree are masked", mutate: func(in *Input) {
			s := in.Scans[tCheckout]
			s.Sockets = append(s.Sockets, node(tCheckout+"/run/gw.sock", KindSocket))
			in.Scans[tCheckout] = s
		}, check: expect(tCheckout+"/run/gw.sock", "mask-file", tCheckout+"/run/pid", "host")},
		{name: "a Crow home inside the checkout is masked over it; the install folder comes back on top", mutate: func(in *Input) {
			in.CrowHome = dirFacts(tCheckout + "/.crow")
			in.DataDir = dirFacts(tCheckout + "/.crow/data")
			in.Install = dirFacts(tCheckout + "/.crow/bundles/demo")
			in.DataFolder = dirFacts(tCheckout + "/.crow/data/demo")
			in.Scans = map[string]TreeScan{
				tCheckout:                         scan(tCheckout),
				tCheckout + "/.crow/bundles/demo": scan(tCheckout + "/.crow/bundles/demo"),
				tCheckout + "/.crow/data/demo":    scan(tCheckout + "/.crow/data/demo"),
			}
		}, check: expect(tCheckout+"/.crow/secrets/k", "mask-dir", tCheckout+"/.crow/mcp-addons.json", "mask-dir",
			tCheckout+"/.crow/data/other/x", "mask-dir", tCheckout+"/.crow/bundles/demo/index.js", "ro-bind-fd",
			tCheckout+"/.crow/data/demo/x", "bind-fd", tCheckout+"/server/x.js", "host")},
		{name: "a data dir inside the install folder is masked over it; the own data folder comes back", mutate: func(in *Input) {
			in.DataDir = dirFacts(tInstall + "/data")
			in.DataFolder = dirFacts(tInstall + "/data/demo")
			delete(in.Scans, tFolder)
			in.Scans[tInstall+"/data/demo"] = scan(tInstall + "/data/demo")
		}, check: expect(tInstall+"/data/other/x", "mask-dir", tInstall+"/data/demo/x", "bind-fd", tInstall+"/index.js", "ro-bind-fd")},
		{name: "a data dir alone inside the checkout is masked", mutate: func(in *Input) {
			in.DataDir = dirFacts(tCheckout + "/data")
			in.DataFolder = dirFacts(tCheckout + "/data/demo")
			delete(in.Scans, tFolder)
			in.Scans[tCheckout+"/data/demo"] = scan(tCheckout + "/data/demo")
		}, check: expect(tCheckout+"/data/crow.db", "mask-dir", tCheckout+"/data/demo/x", "bind-fd")},
	})
}

func TestBuildDataFolder(t *testing.T) {
	runRows(t, []row{
		{name: "data folder is bound read-write by fd beneath the data dir", check: func(p *Plan) string {
			m := p.Visible(tFolder + "/x")
			if m == nil || m.Kind != Bind || m.Anchor != tData || m.ExpectKind != KindDir || m.Expect.IsZero() {
				return "data folder bind is not a checked fd bind beneath the data dir"
			}
			return ""
		}},
		{name: "data folder that is a symlink is refused", mutate: func(in *Input) {
			in.DataFolder = linkFacts(tFolder, "/home/u/.ssh", "/home/u/.ssh", KindDir)
		}, wantErr: "is a symlink"},
		{name: "data folder that is a file is refused", mutate: func(in *Input) {
			in.DataFolder = fileFacts(tFolder)
		}, wantErr: "not a folder"},
		{name: "missing data folder is refused", mutate: func(in *Input) {
			in.DataFolder = PathFacts{Path: tFolder}
		}, wantErr: "does not exist"},
		{name: "data folder owned by someone else is refused", mutate: func(in *Input) {
			in.DataFolder.UID = 0
		}, wantErr: "belongs to uid 0"},
		{name: "another add-on's data folder is never shown, at either spelling", mutate: func(in *Input) {
			in.DataDir = PathFacts{Path: "/srv/data", Real: tData, Kind: KindSymlink, RealKind: KindDir, ID: newID(), UID: tUID, Mode: 0o755}
			in.DataFolder.Path = "/srv/data/demo"
		}, check: func(p *Plan) string {
			if msg := expect(tData+"/other/x", "", "/srv/data/other/x", "", tFolder+"/x", "bind-fd")(p); msg != "" {
				return msg
			}
			found := 0
			for _, n := range p.NeverBind {
				if n == "/srv/data" || n == tData {
					found++
				}
			}
			if found != 2 {
				return "never-bind list lacks a spelling of the data dir"
			}
			return ""
		}},
	})
}

func grant(field, path string, owner bool, facts PathFacts) Grant {
	return Grant{Field: field, Value: path, OwnerTyped: owner, Facts: facts}
}

func TestBuildGrants(t *testing.T) {
	share := "/srv/share"
	withShare := func(in *Input) { in.Scans[share] = scan(share) }
	runRows(t, []row{
		{name: "read grant is bound read-only by fd", mutate: func(in *Input) {
			withShare(in)
			in.Profile.Read = []Grant{grant("DOCS", share, true, dirFacts(share))}
		}, check: expect(share+"/a", "ro-bind-fd")},
		{name: "read grant also in write stays read-only", mutate: func(in *Input) {
			withShare(in)
			f := dirFacts(share)
			in.Profile.Read = []Grant{grant("DOCS", share, true, f)}
			in.Profile.Write = []Grant{grant("DOCS", share, true, f)}
		}, check: expect(share+"/a", "ro-bind-fd")},
		{name: "write grant is bound read-write by fd", mutate: func(in *Input) {
			withShare(in)
			in.Profile.Write = []Grant{grant("OUT", share, true, dirFacts(share))}
		}, check: expect(share+"/a", "bind-fd")},
		{name: "write grant of a single file is bound read-write by fd", mutate: func(in *Input) {
			in.Profile.Write = []Grant{grant("OUT", "/srv/out.json", true, fileFacts("/srv/out.json"))}
		}, check: expect("/srv/out.json", "bind-fd", "/srv/other.json", "")},
		{name: "a .env inside an owner folder is masked", mutate: func(in *Input) {
			withShare(in)
			in.Profile.Read = []Grant{grant("DOCS", share, true, dirFacts(share))}
			addSensitive(in, share, node(share+"/.env", KindFile))
		}, check: expect(share+"/.env", "mask-file", share+"/a", "ro-bind-fd")},
		{name: "a grant that is only a manifest default is refused, naming the field", mutate: func(in *Input) {
			withShare(in)
			in.Profile.Read = []Grant{grant("DOCS_DIR", share, false, dirFacts(share))}
		}, wantErr: "sandbox.files.read (DOCS_DIR): the value is only the manifest's default"},
		{name: "oauthDir binds the token file's folder read-write", mutate: func(in *Input) {
			in.Scans["/srv/tokens"] = scan("/srv/tokens")
			in.Profile.OAuthDir = &Grant{Field: "TOKEN_FILE", Value: "/srv/tokens/token.json", OwnerTyped: true, Facts: dirFacts("/srv/tokens")}
		}, check: expect("/srv/tokens/token.json", "bind-fd")},
		{name: "oauthDir whose token sits directly in the home is refused", mutate: func(in *Input) {
			in.Profile.OAuthDir = &Grant{Field: "TOKEN_FILE", Value: tHome + "/token.json", OwnerTyped: true, Facts: dirFacts(tHome)}
		}, wantErr: "TOKEN_FILE"},
		{name: "oauthDir from a manifest default is refused", mutate: func(in *Input) {
			in.Profile.OAuthDir = &Grant{Field: "TOKEN_FILE", Value: "/srv/tokens/t.json", Facts: dirFacts("/srv/tokens")}
		}, wantErr: "sandbox.files.oauthDir (TOKEN_FILE)"},
		{name: "a grant of the whole home is refused", mutate: func(in *Input) {
			in.Profile.Read = []Grant{grant("H", tHome, true, dirFacts(tHome))}
		}, wantErr: "which the wall never binds"},
		{name: "a grant of / is refused", mutate: func(in *Input) {
			in.Profile.Read = []Grant{grant("R", "/", true, rootDir("/"))}
		}, wantErr: "never"},
		{name: "a grant inside .ssh is refused", mutate: func(in *Input) {
			in.Profile.Read = []Grant{grant("K", "/srv/.ssh/keys", true, dirFacts("/srv/.ssh/keys"))}
		}, wantErr: "shielded"},
		{name: "a grant of a .env file is refused", mutate: func(in *Input) {
			in.Profile.Read = []Grant{grant("E", "/srv/app/.env", true, fileFacts("/srv/app/.env"))}
		}, wantErr: "secrets file"},
		{name: "a grant of ~/.config/autostart is refused", mutate: func(in *Input) {
			in.Profile.Write = []Grant{grant("A", tHome+"/.config/autostart", true, dirFacts(tHome+"/.config/autostart"))}
		}, wantErr: "never binds"},
		{name: "a grant of ~/.bashrc is refused", mutate: func(in *Input) {
			in.Profile.Write = []Grant{grant("B", tHome+"/.bashrc", true, fileFacts(tHome+"/.bashrc"))}
		}, wantErr: "never binds"},
		{name: "a grant of another add-on's data is refused", mutate: func(in *Input) {
			in.Profile.Read = []Grant{grant("O", tData+"/other", true, dirFacts(tData+"/other"))}
		}, wantErr: "never binds"},
		{name: "a grant that is a symlink is refused", mutate: func(in *Input) {
			in.Profile.Read = []Grant{grant("L", "/srv/link", true, linkFacts("/srv/link", "/srv/share", "/srv/share", KindDir))}
		}, wantErr: "name the real path"},
		{name: "a relative grant is refused", mutate: func(in *Input) {
			in.Profile.Read = []Grant{grant("R", "docs/../x", true, dirFacts("/srv/x"))}
		}, wantErr: "not a clean absolute path"},
		{name: "a write grant over the checkout is refused", mutate: func(in *Input) {
			in.Profile.Write = []Grant{grant("W", tCheckout+"/servers", true, dirFacts(tCheckout+"/servers"))}
		}, wantErr: "rewrite code"},
		{name: "a grant under /proc is refused", mutate: func(in *Input) {
			in.Profile.Read = []Grant{grant("P", "/proc/1", true, dirFacts("/proc/1"))}
		}, wantErr: "sockets"},
		{name: "an owner folder too large to scan is not bound", mutate: func(in *Input) {
			s := scan(share)
			s.Incomplete = "too deep"
			in.Scans[share] = s
			in.Profile.Read = []Grant{grant("DOCS", share, true, dirFacts(share))}
		}, check: func(p *Plan) string {
			if hostVisible(p, share+"/a") || len(p.Unbound) != 1 || !strings.Contains(p.Unbound[0].Reason, "DOCS") {
				return "an unscannable owner folder is bound or not reported"
			}
			return ""
		}},
	})
}

func TestBuildOwnEnvFile(t *testing.T) {
	envPath := tInstall + "/.env"
	withEnv := func(n Node) func(in *Input) {
		return func(in *Input) {
			in.Profile.OwnEnvFile = true
			addSensitive(in, tInstall, n)
		}
	}
	good := node(envPath, KindFile)
	symlink := Node{Path: envPath, Kind: KindSymlink, Target: tHome + "/.crow/secrets/k", TargetKind: KindFile, TargetID: newID()}
	hard := node(envPath, KindFile)
	hard.Nlink = 2
	big := node(envPath, KindFile)
	big.Size = MaxOwnEnvFileSize + 1
	runRows(t, []row{
		{name: "own .env is masked then bound again read-only by fd on top", mutate: withEnv(good), check: func(p *Plan) string {
			m := p.Visible(envPath)
			if m == nil || m.Kind != RoBindFd || m.Anchor != tInstall {
				return "own .env is not re-bound read-only by fd"
			}
			masked := false
			for _, x := range p.Mounts {
				if x.Dest == envPath && x.Kind == MaskFile {
					masked = true
				}
				if x.Dest == envPath && x.Kind == RoBindFd && !masked {
					return "own .env re-bound before its mask"
				}
			}
			if !masked {
				return "own .env not masked first"
			}
			return ""
		}},
		{name: "without ownEnvFile the .env stays masked", mutate: func(in *Input) { addSensitive(in, tInstall, good) },
			check: expect(envPath, "mask-file")},
		{name: "a symlinked own .env is refused", mutate: withEnv(symlink), wantErr: "is a symlink"},
		{name: "a hard-linked own .env is refused", mutate: withEnv(hard), wantErr: "hard link"},
		{name: "an oversized own .env is refused", mutate: withEnv(big), wantErr: "over the"},
		{name: "a FIFO own .env is refused", mutate: withEnv(node(envPath, KindFIFO)), wantErr: "not a file"},
	})
}

func TestBuildStateDirsAndCrowDB(t *testing.T) {
	state := tCrow + "/browser"
	withState := func(first bool, f PathFacts) func(in *Input) {
		return func(in *Input) {
			in.Profile.FirstParty = first
			in.Profile.StateDirs = []StateDir{{Name: "browser", Facts: f}}
			in.Scans[state] = scan(state)
		}
	}
	runRows(t, []row{
		{name: "a first-party state folder is bound read-write by fd", mutate: withState(true, dirFacts(state)),
			check: expect(state+"/x", "bind-fd", tCrow+"/secrets/k", "")},
		{name: "a third-party add-on gets no state folder", mutate: withState(false, dirFacts(state)),
			check: expect(state+"/x", "")},
		{name: "a state folder that is a symlink is not bound", mutate: withState(true, linkFacts(state, "/srv/x", "/srv/x", KindDir)),
			check: expect(state+"/x", "", "/srv/x/y", "")},
		{name: "a state folder that does not exist is not bound", mutate: withState(true, PathFacts{Path: state}),
			check: expect(state+"/x", "")},
		{name: "a state folder named like a Crow home entry is refused", mutate: func(in *Input) {
			in.Profile.FirstParty = true
			in.Profile.StateDirs = []StateDir{{Name: "secrets", Facts: dirFacts(tCrow + "/secrets")}}
		}, wantErr: "Crow's own home entries"},
		{name: "a crowDb add-on sees crow.db and its own folder, nothing else of the data folder", mutate: func(in *Input) {
			in.Profile.CrowDB = true
			in.Profile.DataDirEntries = []DirEntry{
				{Name: "crow.db", Kind: KindFile}, {Name: "crow.db-wal", Kind: KindFile}, {Name: "crow.db-shm", Kind: KindFile},
				{Name: "tasks.db", Kind: KindFile}, {Name: "other", Kind: KindDir}, {Name: "demo", Kind: KindDir},
				{Name: "secret.key", Kind: KindFile},
			}
		}, check: expect(tData+"/crow.db", "bind-fd", tData+"/crow.db-wal", "bind-fd", tData+"/tasks.db", "mask-file",
			tData+"/other/x", "mask-dir", tData+"/secret.key", "mask-file", tFolder+"/x", "bind-fd")},
	})
}

func TestBuildDoorsAndEnv(t *testing.T) {
	runRows(t, []row{
		{name: "an add-on with doors gets the token file and its variable", mutate: func(in *Input) { in.Profile.Doors = true },
			check: func(p *Plan) string {
				m := p.Visible(DoorTokenPath)
				if m == nil || m.Kind != RoBindData || m.Slot != DoorTokenSlot || m.Perms != 0o400 {
					return "door token file not planned as 0400 bind data"
				}
				if p.Env["CROW_ADDON_DOOR_TOKEN_FILE"] != DoorTokenPath {
					return "CROW_ADDON_DOOR_TOKEN_FILE not set"
				}
				return ""
			}},
		{name: "an add-on without doors gets neither", check: func(p *Plan) string {
			if p.Visible(DoorTokenPath) != nil {
				return "door token planned without doors"
			}
			if _, ok := p.Env["CROW_ADDON_DOOR_TOKEN_FILE"]; ok {
				return "door variable set without doors"
			}
			return ""
		}},
		{name: "HOME and the caches sit in the data folder", check: func(p *Plan) string {
			if p.Env["HOME"] != tFolder || p.Env["XDG_CACHE_HOME"] != tFolder+"/.cache" ||
				p.Env["npm_config_cache"] != tFolder+"/.cache/npm" || p.Env["UV_CACHE_DIR"] != tFolder+"/.cache/uv" ||
				p.Env["TMPDIR"] != "/tmp" || p.Env["HTTPS_PROXY"] != "http://127.0.0.1:39080" {
				return "wall variables wrong"
			}
			return ""
		}},
		{name: "a bumped proxy port is used", mutate: func(in *Input) { in.ProxyPort = 39081 }, check: func(p *Plan) string {
			if p.Env["http_proxy"] != "http://127.0.0.1:39081" {
				return "proxy port not used"
			}
			return ""
		}},
	})
}
