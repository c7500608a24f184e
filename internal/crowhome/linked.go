package crowhome

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SystemCommandDirs are the root-owned folders whose programs are system
// launchers, not add-on code (Crow's resolve-command list): an absolute
// command there (/usr/bin/node) does not make an add-on linked. Callers add
// the node install's bin folder.
var SystemCommandDirs = []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"}

// LinkFacts are what the filesystem says about an add-on's folders. Gather
// them with GatherLinkFacts; Linked decides from them alone, so the rule is
// testable as a table.
type LinkFacts struct {
	// OwnDir is <CROW_HOME>/bundles/<id> with <CROW_HOME>/bundles at its
	// real path (the last element, the install folder, is not resolved).
	// Empty: the lexical path is used.
	OwnDir string
	// InstallIsSymlink is true when Lstat of the install folder says symlink.
	InstallIsSymlink bool
	// InstallTarget is the real path a symlinked install folder leads to.
	InstallTarget string
	// CwdReal is the real path of the entry's cwd; empty when the entry has
	// none or it could not be resolved.
	CwdReal string
	// CommandReal is the real path of an absolute command; empty when the
	// command is not absolute or could not be resolved.
	CommandReal string
	// TrustedDirs are real paths of folders whose programs are not add-on
	// code (SystemCommandDirs, the node install).
	TrustedDirs []string
}

// LinkReason says why an add-on counts as checkout-linked.
type LinkReason string

// The reasons, as CamelCase words.
const (
	// LinkInstallSymlink: the install folder is a symlink into elsewhere.
	LinkInstallSymlink LinkReason = "InstallFolderIsSymlink"
	// LinkCwdOutside: the entry keeps a cwd outside the install folder.
	LinkCwdOutside LinkReason = "CwdOutsideInstallFolder"
	// LinkCommandOutside: the entry's absolute command lies outside the
	// install folder and outside the trusted folders.
	LinkCommandOutside LinkReason = "CommandOutsideInstallFolder"
)

// Link is Linked's answer.
type Link struct {
	Linked  bool
	Reasons []LinkReason
}

// Linked says whether an add-on runs code from a folder its wall would not
// bind as its own: its install folder is a symlink, or its entry keeps a cwd
// or an absolute command outside <CROW_HOME>/bundles/<id>, compared at real
// paths (so a checkout reached through a symlinked folder counts). A path
// that could not be resolved is compared as written, cleaned.
func Linked(crowHome, id string, e Entry, f LinkFacts) Link {
	lexOwn := filepath.Join(filepath.Clean(crowHome), "bundles", id)
	own := f.OwnDir
	if own == "" {
		own = lexOwn
	}
	insideOwn := func(real, written string) bool {
		if real != "" {
			return within(real, own)
		}
		p := filepath.Clean(written)
		return within(p, own) || within(p, lexOwn)
	}
	var l Link
	if f.InstallIsSymlink {
		l.Reasons = append(l.Reasons, LinkInstallSymlink)
	}
	if e.Cwd != "" && !insideOwn(f.CwdReal, e.Cwd) {
		l.Reasons = append(l.Reasons, LinkCwdOutside)
	}
	if filepath.IsAbs(e.Command) && !insideOwn(f.CommandReal, e.Command) {
		p := f.CommandReal
		if p == "" {
			p = filepath.Clean(e.Command)
		}
		trusted := false
		for _, d := range f.TrustedDirs {
			if d != "" && within(p, filepath.Clean(d)) {
				trusted = true
			}
		}
		if !trusted {
			l.Reasons = append(l.Reasons, LinkCommandOutside)
		}
	}
	l.Linked = len(l.Reasons) > 0
	return l
}

// within reports whether p is base or below it (both clean and absolute).
func within(p, base string) bool {
	if base == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == base || strings.HasPrefix(p, base+"/")
}

// GatherLinkFacts reads the facts Linked decides from. trustedDirs are
// resolved to real paths (on a merged-/usr system /bin is /usr/bin); nil
// means SystemCommandDirs. A missing install folder is not an error (an
// http add-on may have none); one that cannot be examined is.
func GatherLinkFacts(crowHome, id string, e Entry, trustedDirs []string) (LinkFacts, error) {
	var f LinkFacts
	if err := ValidID(id); err != nil {
		return f, &FileError{File: filepath.Join(crowHome, "bundles"), Key: path(nil).mapKey(id).String(), Msg: err.Error()}
	}
	bundles := filepath.Join(crowHome, "bundles")
	if real, err := filepath.EvalSymlinks(bundles); err == nil {
		f.OwnDir = filepath.Join(real, id)
	}
	install := filepath.Join(bundles, id)
	fi, err := os.Lstat(install)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return f, &FileError{File: install, Msg: "could not be examined: " + err.Error(), Err: err}
	case fi.Mode()&fs.ModeSymlink != 0:
		f.InstallIsSymlink = true
		if real, err := filepath.EvalSymlinks(install); err == nil {
			f.InstallTarget = real
		}
	}
	if filepath.IsAbs(e.Cwd) {
		if real, err := filepath.EvalSymlinks(e.Cwd); err == nil {
			f.CwdReal = real
		}
	}
	if filepath.IsAbs(e.Command) {
		if real, err := filepath.EvalSymlinks(e.Command); err == nil {
			f.CommandReal = real
		}
	}
	if trustedDirs == nil {
		trustedDirs = SystemCommandDirs
	}
	for _, d := range trustedDirs {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			f.TrustedDirs = append(f.TrustedDirs, real)
		}
	}
	return f, nil
}
