package bwrap

import (
	"os"
	"strings"
	"testing"

	"github.com/addonwall/addonwall/internal/plan"
	"github.com/addonwall/addonwall/internal/planfacts"
)

func TestOpenBind(t *testing.T) {
	root := testRoot(t)
	mkfile(t, root+"/a/b/f", "x")
	if err := os.Symlink(root+"/a", root+"/link"); err != nil {
		t.Fatal(err)
	}
	facts := func(p string) plan.PathFacts {
		f, err := planfacts.Describe(p)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	dirB, fileF := facts(root+"/a/b"), facts(root+"/a/b/f")
	cases := []struct {
		name    string
		m       plan.Mount
		wantErr string
	}{
		{"a folder at its real path opens (positive control)", plan.Mount{Kind: plan.Bind, Source: root + "/a/b", Dest: root + "/a/b", Anchor: root, Expect: dirB.ID, ExpectKind: plan.KindDir}, ""},
		{"a file opens (positive control)", plan.Mount{Kind: plan.RoBindFd, Source: root + "/a/b/f", Dest: root + "/a/b/f", Anchor: "/", Expect: fileF.ID, ExpectKind: plan.KindFile}, ""},
		{"a symlink in the middle of the path", plan.Mount{Kind: plan.Bind, Source: root + "/link/b", Dest: root + "/link/b", Anchor: root, Expect: dirB.ID, ExpectKind: plan.KindDir}, "without following symlinks"},
		{"a symlink in the anchor", plan.Mount{Kind: plan.Bind, Source: root + "/link/b", Dest: root + "/link/b", Anchor: root + "/link", Expect: dirB.ID, ExpectKind: plan.KindDir}, "without following symlinks"},
		{"a symlink at the end", plan.Mount{Kind: plan.Bind, Source: root + "/link", Dest: root + "/link", Anchor: root, Expect: dirB.ID, ExpectKind: plan.KindDir}, "symlink"},
		{"another kind than planned", plan.Mount{Kind: plan.Bind, Source: root + "/a/b/f", Dest: root + "/a/b/f", Anchor: root, Expect: fileF.ID, ExpectKind: plan.KindDir}, "no longer a dir"},
		{"another inode than planned", plan.Mount{Kind: plan.Bind, Source: root + "/a/b", Dest: root + "/a/b", Anchor: root, Expect: fileF.ID, ExpectKind: plan.KindDir}, "stale"},
		{"a source outside its anchor", plan.Mount{Kind: plan.Bind, Source: root + "/a", Dest: root + "/a", Anchor: root + "/a/b", Expect: dirB.ID, ExpectKind: plan.KindDir}, "not beneath"},
		{"a missing source", plan.Mount{Kind: plan.Bind, Source: root + "/a/none", Dest: root + "/a/none", Anchor: root, Expect: dirB.ID, ExpectKind: plan.KindDir}, "no such file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := OpenBind(c.m)
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				f.Close()
				return
			}
			if err == nil {
				f.Close()
				t.Fatalf("opened; want an error containing %q", c.wantErr)
			}
			if !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error %q does not contain %q", err, c.wantErr)
			}
		})
	}
}
