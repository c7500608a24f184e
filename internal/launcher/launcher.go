// Package launcher resolves an add-on's command to the one real file that
// will run, with Crow's resolve-command rules: a bare name only from the
// trusted system folders, root-owned all the way up; a ./relative command
// only inside the add-on's own folder and only with a matching
// command_sha256 pin; an absolute command root-owned, or pinned.
package launcher

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// TrustedDirs are the folders a bare command name is looked up in, in order.
var TrustedDirs = []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"}

// maxPinned bounds the size of a file whose sha256 is checked.
const maxPinned = 256 << 20

// Resolved is a command resolved to a real file.
type Resolved struct {
	// Path is the real path of what runs.
	Path string
	// Runtime is the runtime's install folder (node's prefix) when the
	// command is a known runtime, else "".
	Runtime string
}

// Resolve resolves command for the add-on whose install folder is
// installDir. pin is the entry's command_sha256 ("" for none).
func Resolve(command, installDir, pin string) (Resolved, error) {
	if command == "" {
		return Resolved{}, errors.New("the entry has no command")
	}
	for _, part := range strings.Split(command, "/") {
		if part == ".." {
			return Resolved{}, fmt.Errorf("command %q has a .. element", command)
		}
	}
	var real string
	var err error
	switch {
	case !strings.Contains(command, "/"):
		real, err = lookTrusted(command)
	case filepath.IsAbs(command):
		real, err = absolute(command, pin)
	default:
		real, err = relative(command, installDir, pin)
	}
	if err != nil {
		return Resolved{}, err
	}
	r := Resolved{Path: real}
	if base := filepath.Base(real); base == "node" || base == "nodejs" {
		r.Runtime = filepath.Dir(filepath.Dir(real))
	}
	return r, nil
}

func lookTrusted(name string) (string, error) {
	for _, d := range TrustedDirs {
		p := filepath.Join(d, name)
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			continue
		}
		// The first hit decides: a bad first hit is refused, never skipped.
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return "", fmt.Errorf("resolving %s: %w", p, err)
		}
		if err := rootOwnedChain(real); err != nil {
			return "", fmt.Errorf("command %q found at %s, which is not trusted: %w", name, real, err)
		}
		return real, nil
	}
	return "", fmt.Errorf("command %q is not in the trusted system folders (%s); give an absolute path pinned with command_sha256", name, strings.Join(TrustedDirs, ", "))
}

func absolute(command, pin string) (string, error) {
	real, err := filepath.EvalSymlinks(command)
	if err != nil {
		return "", fmt.Errorf("resolving command %s: %w", command, err)
	}
	if err := regularExec(real); err != nil {
		return "", err
	}
	if rootOwnedChain(real) == nil {
		return real, nil
	}
	if pin == "" {
		return "", fmt.Errorf("command %s is not root-owned and has no command_sha256 pin", real)
	}
	return real, checkPin(real, pin)
}

func relative(command, installDir, pin string) (string, error) {
	root, err := filepath.EvalSymlinks(installDir)
	if err != nil {
		return "", fmt.Errorf("resolving the install folder %s: %w", installDir, err)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(installDir, command))
	if err != nil {
		return "", fmt.Errorf("resolving command %s in %s: %w", command, installDir, err)
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("command %s leads outside the install folder, to %s", command, real)
	}
	if err := regularExec(real); err != nil {
		return "", err
	}
	if pin == "" {
		return "", fmt.Errorf("command %s is relative and has no command_sha256 pin (re-pin it)", command)
	}
	return real, checkPin(real, pin)
}

func regularExec(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("command %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("command %s is not an executable file", p)
	}
	return nil
}

// rootOwnedChain checks that the file and every folder above it are owned
// by root and writable by no one else.
func rootOwnedChain(real string) error {
	for p := real; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Uid != 0 {
			return fmt.Errorf("%s is not owned by root", p)
		}
		if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0 {
			return fmt.Errorf("%s is writable by group or others", p)
		}
		if p == "/" {
			return nil
		}
	}
}

func checkPin(real, pin string) error {
	f, err := os.Open(real)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxPinned)); err != nil {
		return fmt.Errorf("hashing %s: %w", real, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != pin {
		return fmt.Errorf("command %s does not match its command_sha256 pin (it changed since it was pinned; re-pin it)", real)
	}
	return nil
}
