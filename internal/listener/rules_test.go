package listener

import (
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/addonwall/addonwall/internal/dockerwatch"
)

func TestIsCrowProcess(t *testing.T) {
	cases := []struct {
		name string
		p    Process
		want bool
	}{
		{"positive control: an unrelated node service", Process{Argv: []string{"node", "/srv/app/server.js"}, Exe: "/usr/bin/node", Cwd: "/srv/app"}, false},
		{"positive control: a folder merely named gateway", Process{Argv: []string{"node", "/srv/gateway/index.js"}, Cwd: "/srv"}, false},
		{"positive control: servers without gateway", Process{Argv: []string{"/srv/servers/api"}}, false},
		{"gateway, absolute, another checkout", Process{Argv: []string{"node", "/home/b/crow/servers/gateway/index.js"}}, true},
		{"gateway, relative", Process{Argv: []string{"node", "servers/gateway/index.js"}}, true},
		{"gateway, by working folder", Process{Argv: []string{"node", "index.js"}, Cwd: "/opt/crow/servers/gateway"}, true},
		{"gateway, by a resolved path", Process{Argv: []string{"node", "/tmp/x/index.js"}, ArgPaths: []string{"/opt/crow/servers/gateway/index.js"}}, true},
		{"gateway, in --flag=", Process{Argv: []string{"node", "--import=/opt/crow/servers/gateway/boot.mjs"}}, true},
		{"satellite folder", Process{Argv: []string{"node", "/opt/crow/satellite/agent.mjs"}}, true},
		{"satellite script", Process{Argv: []string{"node", "scripts/satellite.mjs"}}, true},
		{"crow-satellite binary", Process{Argv: []string{"crow-satellite"}, Exe: "/usr/local/bin/crow-satellite"}, true},
		{"crow-gateway binary", Process{Exe: "/usr/local/bin/crow-gateway"}, true},
	}
	for _, tc := range cases {
		if got := IsCrowProcess(tc.p); got != tc.want {
			t.Errorf("%s: IsCrowProcess(%+v) = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
}

func TestUnderTreeTable(t *testing.T) {
	roots := []string{"/home/u/crow", "/home/u/.crow", "/data/crow"} // /data/crow: the checkout's real path
	cases := []struct {
		name string
		p    Process
		want string
	}{
		{"positive control: elsewhere", Process{Argv: []string{"python3", "-m", "http.server"}, Exe: "/usr/bin/python3.11", Cwd: "/srv/www"}, ""},
		{"positive control: a sibling with a longer name", Process{Argv: []string{"/home/u/crowbar/run"}, Exe: "/home/u/crowbar/run", Cwd: "/home/u/crowbar"}, ""},
		{"executable", Process{Exe: "/home/u/crow/node_modules/.bin/x"}, "executable"},
		{"working folder", Process{Cwd: "/home/u/.crow/bundles/x"}, "working folder"},
		{"working folder is the root", Process{Cwd: "/home/u/crow"}, "working folder"},
		{"argv path", Process{Argv: []string{"node", "/home/u/crow/servers/x.js"}}, "argv element"},
		{"argv inside a script", Process{Argv: []string{"node", "-e", "require('/home/u/.crow/x')"}}, "argv element"},
		{"argv ends with a root", Process{Argv: []string{"--dir=/home/u/crow"}}, "argv element"},
		{"argv resolved", Process{Argv: []string{"node", "/tmp/l/x.js"}, ArgPaths: []string{"/tmp/l/x.js", "/data/crow/x.js"}}, "argv element"},
	}
	for _, tc := range cases {
		if got := underTree(tc.p, roots); got != tc.want {
			t.Errorf("%s: underTree = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestArgPaths(t *testing.T) {
	resolve := func(p string) string {
		if p == "/tmp/l/x.js" {
			return "/data/crow/x.js"
		}
		return p
	}
	got := argPaths([]string{"node", "/tmp/l/x.js", "rel/y.js", "--require=z/w.js", "plain"}, "/srv", resolve)
	// The whole "--require=z/w.js" is tried as a path too: harmless, and
	// simpler than knowing every flag.
	want := []string{"/tmp/l/x.js", "/data/crow/x.js", "/srv/rel/y.js", "/srv/--require=z/w.js", "/srv/z/w.js"}
	if len(got) != len(want) {
		t.Fatalf("argPaths = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("argPaths = %q, want %q", got, want)
		}
	}
}

func TestJudgeContainers(t *testing.T) {
	const co = "/srv/crow"
	target := netip.MustParseAddrPort("127.0.0.1:8600")
	rules := func(addon string, installed ...string) containerRules {
		set := map[string]bool{}
		for _, i := range installed {
			set[i] = true
		}
		return containerRules{
			addonID:   addon,
			installed: func(id string) bool { return id == addon || set[id] },
			bundles:   []string{filepath.Join(co, "bundles")},
			resolve:   func(p string) string { return p },
		}
	}
	pub := func(project, hostIP string, port uint16, wd string) dockerwatch.Published {
		return dockerwatch.Published{ContainerID: "0123456789abcdef", Project: project, HostIP: hostIP, HostPort: port, Protocol: "tcp", WorkingDir: wd}
	}
	cases := []struct {
		name string
		pub  []dockerwatch.Published
		r    containerRules
		want Reason
	}{
		{"positive control: own project", []dockerwatch.Published{pub("funkwhale", "127.0.0.1", 8600, "/home/u/.crow/bundles/funkwhale")}, rules("funkwhale"), ""},
		{"own project on every address", []dockerwatch.Published{pub("funkwhale", "0.0.0.0", 8600, "")}, rules("funkwhale"), ""},
		{"own project, IPv6 any", []dockerwatch.Published{pub("funkwhale", "::", 8600, "")}, rules("funkwhale"), ""},
		{"no container at all", nil, rules("funkwhale"), ReasonNotAContainerPort},
		{"another port", []dockerwatch.Published{pub("funkwhale", "127.0.0.1", 8601, "")}, rules("funkwhale"), ReasonNotAContainerPort},
		{"another address", []dockerwatch.Published{pub("funkwhale", "127.0.0.2", 8600, "")}, rules("funkwhale"), ReasonNotAContainerPort},
		{"udp only", []dockerwatch.Published{{Project: "funkwhale", HostIP: "127.0.0.1", HostPort: 8600, Protocol: "udp"}}, rules("funkwhale"), ReasonNotAContainerPort},
		{"unlabelled", []dockerwatch.Published{pub("", "127.0.0.1", 8600, "")}, rules("funkwhale"), ReasonUnlabelledContainer},
		{"another installed add-on", []dockerwatch.Published{pub("gotosocial", "127.0.0.1", 8600, "")}, rules("funkwhale", "gotosocial"), ReasonOtherProject},
		{"a project of no installed add-on", []dockerwatch.Published{pub("stranger", "127.0.0.1", 8600, "")}, rules("funkwhale"), ReasonNotInstalled},
		{"case is not normalised", []dockerwatch.Published{pub("Funkwhale", "127.0.0.1", 8600, "")}, rules("funkwhale", "Funkwhale"), ReasonOtherProject},
		{"any refusal wins", []dockerwatch.Published{pub("funkwhale", "127.0.0.1", 8600, ""), pub("", "0.0.0.0", 8600, "")}, rules("funkwhale"), ReasonUnlabelledContainer},
		{"an unreadable host address is judged", []dockerwatch.Published{pub("", "what", 8600, "")}, rules("funkwhale"), ReasonUnlabelledContainer},
		// The named exception.
		{"media reaches installed kokoro-tts", []dockerwatch.Published{pub("kokoro-tts", "127.0.0.1", 8600, "")}, rules("media", "kokoro-tts"), ""},
		{"media, kokoro-tts not installed", []dockerwatch.Published{pub("kokoro-tts", "127.0.0.1", 8600, "")}, rules("media"), ReasonNotInstalled},
		{"the exception is media's only", []dockerwatch.Published{pub("kokoro-tts", "127.0.0.1", 8600, "")}, rules("funkwhale", "kokoro-tts"), ReasonOtherProject},
		// LO-12: the checkout's own bundle folders.
		{"checkout bundle, installed", []dockerwatch.Published{pub("funkwhale", "127.0.0.1", 8600, co+"/bundles/funkwhale")}, rules("funkwhale"), ""},
		{"checkout bundle of an installed exception", []dockerwatch.Published{pub("kokoro-tts", "127.0.0.1", 8600, co+"/bundles/kokoro-tts")}, rules("media", "kokoro-tts"), ""},
		{"checkout bundle not installed", []dockerwatch.Published{pub("kokoro-tts", "127.0.0.1", 8600, co+"/bundles/kokoro-tts")}, rules("media"), ReasonNotInstalled},
		{"checkout bundle labelled as another project", []dockerwatch.Published{pub("funkwhale", "127.0.0.1", 8600, co+"/bundles/gotosocial/sub")}, rules("funkwhale", "gotosocial"), ReasonOtherProject},
	}
	for _, tc := range cases {
		got, detail := judgeContainers(tc.pub, target, tc.r)
		if got != tc.want {
			t.Errorf("%s: judgeContainers = %q (%s), want %q", tc.name, got, detail, tc.want)
		}
	}
}
