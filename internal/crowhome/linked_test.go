package crowhome

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestLinkedRule(t *testing.T) {
	const home = "/home/u/.crow"
	trusted := []string{"/usr/bin", "/usr/local/bin"}
	own := LinkFacts{OwnDir: "/home/u/.crow/bundles/kb", TrustedDirs: trusted}
	cases := []struct {
		name  string
		e     Entry
		facts LinkFacts
		want  []LinkReason
	}{
		{"relative command in its own folder", Entry{Command: "node", Args: []string{"server/index.js"}}, own, nil},
		{"cwd inside", Entry{Command: "node", Cwd: "/home/u/.crow/bundles/kb/server"}, withCwd(own, "/home/u/.crow/bundles/kb/server"), nil},
		{"cwd is the folder", Entry{Command: "node", Cwd: "/home/u/.crow/bundles/kb"}, withCwd(own, "/home/u/.crow/bundles/kb"), nil},
		{"cwd in the checkout", Entry{Command: "node", Cwd: "/home/u/crow/bundles/kb"}, withCwd(own, "/home/u/crow/bundles/kb"), []LinkReason{LinkCwdOutside}},
		{"cwd spelled inside but really outside", Entry{Command: "node", Cwd: "/home/u/.crow/bundles/kb/src"}, withCwd(own, "/home/u/crow/src"), []LinkReason{LinkCwdOutside}},
		{"cwd spelled outside but really inside", Entry{Command: "node", Cwd: "/srv/alias/kb"}, withCwd(own, "/home/u/.crow/bundles/kb"), nil},
		{"a sibling folder with a shared prefix", Entry{Command: "node", Cwd: "/home/u/.crow/bundles/kb2"}, withCwd(own, "/home/u/.crow/bundles/kb2"), []LinkReason{LinkCwdOutside}},
		{"unresolved cwd with dot-dot", Entry{Command: "node", Cwd: "/home/u/.crow/bundles/kb/../other"}, own, []LinkReason{LinkCwdOutside}},
		{"absolute command inside", Entry{Command: "/home/u/.crow/bundles/kb/run.sh"}, withCommand(own, "/home/u/.crow/bundles/kb/run.sh"), nil},
		{"absolute command in the checkout", Entry{Command: "/home/u/crow/bundles/kb/run.sh"}, withCommand(own, "/home/u/crow/bundles/kb/run.sh"), []LinkReason{LinkCommandOutside}},
		{"absolute user launcher", Entry{Command: "/home/u/bin/uv", Args: []string{"run", "kb"}}, withCommand(own, "/home/u/bin/uv"), []LinkReason{LinkCommandOutside}},
		{"system launcher", Entry{Command: "/usr/bin/node"}, withCommand(own, "/usr/bin/node"), nil},
		{"system spelling that resolves into home", Entry{Command: "/usr/bin/x"}, withCommand(own, "/home/u/crow/x"), []LinkReason{LinkCommandOutside}},
		{"install folder is a symlink", Entry{Command: "node"}, LinkFacts{OwnDir: own.OwnDir, InstallIsSymlink: true, InstallTarget: "/home/u/crow/bundles/kb"}, []LinkReason{LinkInstallSymlink}},
		{"all three", Entry{Command: "/opt/kb/run", Cwd: "/opt/kb"},
			LinkFacts{OwnDir: own.OwnDir, InstallIsSymlink: true, CwdReal: "/opt/kb", CommandReal: "/opt/kb/run", TrustedDirs: trusted},
			[]LinkReason{LinkInstallSymlink, LinkCwdOutside, LinkCommandOutside}},
		{"http add-on", Entry{URL: "http://127.0.0.1:9/mcp"}, own, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Linked(home, "kb", tc.e, tc.facts)
			if !reflect.DeepEqual(got.Reasons, tc.want) || got.Linked != (len(tc.want) > 0) {
				t.Errorf("got %+v, want %v", got, tc.want)
			}
		})
	}
}

func withCwd(f LinkFacts, real string) LinkFacts     { f.CwdReal = real; return f }
func withCommand(f LinkFacts, real string) LinkFacts { f.CommandReal = real; return f }

func TestGatherLinkFacts(t *testing.T) {
	root := t.TempDir()
	realHome := filepath.Join(root, "srv", "crow")
	checkout := filepath.Join(root, "checkout")
	for _, d := range []string{
		filepath.Join(realHome, "bundles", "kb", "server"),
		filepath.Join(checkout, "bundles", "ln"),
		filepath.Join(checkout, "bundles", "kb"),
		filepath.Join(root, "bin"),
	} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The owner reaches the Crow home through a symlink, and one add-on's
	// install folder is a link into the checkout.
	home := filepath.Join(root, "home-crow")
	must(t, os.Symlink(realHome, home))
	must(t, os.Symlink(filepath.Join(checkout, "bundles", "ln"), filepath.Join(realHome, "bundles", "ln")))
	runSh := writeFile(t, realHome, "bundles/kb/run.sh", []byte("#!/bin/sh\n"), 0o700)
	checkoutRun := writeFile(t, checkout, "bundles/kb/run.sh", []byte("#!/bin/sh\n"), 0o700)
	// A link in the install folder pointing into the checkout.
	must(t, os.Symlink(checkoutRun, filepath.Join(realHome, "bundles", "kb", "escape.sh")))
	bin := filepath.Join(root, "bin")
	tool := writeFile(t, root, "bin/tool", []byte("#!/bin/sh\n"), 0o700)

	cases := []struct {
		name string
		id   string
		e    Entry
		want []LinkReason
	}{
		{"plain install", "kb", Entry{Command: "node"}, nil},
		{"cwd through the home's symlinked spelling", "kb", Entry{Command: "node", Cwd: filepath.Join(home, "bundles", "kb", "server")}, nil},
		{"cwd at the real spelling", "kb", Entry{Command: "node", Cwd: filepath.Join(realHome, "bundles", "kb")}, nil},
		{"absolute command inside, symlinked spelling", "kb", Entry{Command: filepath.Join(home, "bundles", "kb", "run.sh")}, nil},
		{"absolute command inside, real spelling", "kb", Entry{Command: runSh}, nil},
		{"in-folder link escaping to the checkout", "kb", Entry{Command: filepath.Join(home, "bundles", "kb", "escape.sh")}, []LinkReason{LinkCommandOutside}},
		{"cwd in the checkout", "kb", Entry{Command: "node", Cwd: filepath.Join(checkout, "bundles", "kb")}, []LinkReason{LinkCwdOutside}},
		{"install folder linked into the checkout", "ln", Entry{Command: "node"}, []LinkReason{LinkInstallSymlink}},
		{"linked folder and cwd through it", "ln", Entry{Command: "node", Cwd: filepath.Join(home, "bundles", "ln")}, []LinkReason{LinkInstallSymlink, LinkCwdOutside}},
		{"trusted tool folder", "kb", Entry{Command: tool}, nil},
		{"no install folder", "web", Entry{URL: "http://127.0.0.1:9/mcp"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := GatherLinkFacts(home, tc.id, tc.e, []string{bin, "/usr/bin"})
			if err != nil {
				t.Fatal(err)
			}
			got := Linked(home, tc.id, tc.e, f)
			if !reflect.DeepEqual(got.Reasons, tc.want) {
				t.Errorf("got %+v (facts %+v), want %v", got, f, tc.want)
			}
		})
	}
	f, err := GatherLinkFacts(home, "ln", Entry{Command: "node"}, nil)
	if err != nil || f.InstallTarget != filepath.Join(checkout, "bundles", "ln") {
		t.Errorf("install target: %+v %v", f, err)
	}
	if _, err := GatherLinkFacts(home, "../x", Entry{Command: "node"}, nil); err == nil {
		t.Errorf("a bad id must be refused")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
