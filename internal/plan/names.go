package plan

import (
	"path/filepath"
	"strings"
)

// Fixed places inside the wall.
const (
	// DoorTokenPath is where the door token file appears inside the wall.
	DoorTokenPath = "/run/crow-addon/door-token"
	// DoorTokenSlot is the RoBindData slot the spawn fills with the token.
	DoorTokenSlot = "door-token"
	// DefaultProxyPort is the in-namespace CONNECT proxy's port.
	DefaultProxyPort = 39080
	// Hostname is the wall's fixed host name, so the host's own name does
	// not leak in through uname.
	Hostname = "crow-addon"
	// MaxOwnEnvFileSize caps <install>/.env; a bigger file is refused.
	MaxOwnEnvFileSize = 1 << 20
)

// shieldedNames are credential files and folders that are never a bind source
// and are masked in every bound tree, whatever a grant says (seed 004's
// sensitive-path shield, widened by DESIGN §7).
var shieldedNames = map[string]bool{
	".ssh":             true,
	".gnupg":           true,
	".aws":             true,
	".azure":           true,
	".kube":            true,
	".docker":          true,
	".netrc":           true,
	".git-credentials": true,
	".pypirc":          true,
	".npmrc":           true,
}

// IsShieldedName reports whether a single path element is a shielded
// credential name.
func IsShieldedName(name string) bool { return shieldedNames[name] }

// IsShieldedPath reports whether any element of the path is a shielded
// credential name, or the path runs through .config/gcloud.
func IsShieldedPath(p string) bool {
	elems := strings.Split(filepath.Clean(p), "/")
	for i, e := range elems {
		if shieldedNames[e] {
			return true
		}
		if e == ".config" && i+1 < len(elems) && elems[i+1] == "gcloud" {
			return true
		}
	}
	return false
}

// IsEnvName reports whether a name is a dotenv file. Besides ".env" the wall
// masks ".env.*" (.env.local, .env.production, ...) and ".envrc" (direnv):
// they hold the same secrets under another name.
func IsEnvName(name string) bool {
	return name == ".env" || name == ".envrc" || strings.HasPrefix(name, ".env.")
}

// IsSensitiveName reports whether an entry with this name is masked wherever
// a bound tree holds it: a dotenv file, a generated .mcp.json (which holds
// resolved secrets), or a shielded credential name.
func IsSensitiveName(name string) bool {
	return IsEnvName(name) || name == ".mcp.json" || shieldedNames[name]
}

// IsShieldedDir reports whether a folder at this path starts a shielded
// subtree: a shielded name, or .config/gcloud.
func IsShieldedDir(p string) bool {
	base := filepath.Base(p)
	if shieldedNames[base] {
		return true
	}
	return base == "gcloud" && filepath.Base(filepath.Dir(p)) == ".config"
}

// systemDirs are the system folders bound read-only (or recreated as the
// same symlinks on a merged-/usr system).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcPaths is the short list of /etc the wall binds. /etc as a whole is not
// bound: it holds host secrets a root-mapped wall could read (/etc/ssl/private
// is 0700 root, and uid 0 inside owns it). /etc/hosts is written by the wall
// itself; /etc/resolv.conf is left out because the namespace has no route to
// a resolver (names are resolved by the relay) and on systemd hosts it points
// into /run.
var etcPaths = []string{
	"/etc/ssl/certs",
	"/etc/ssl/openssl.cnf",
	"/etc/pki/tls/certs",
	"/etc/pki/ca-trust/extracted",
	"/etc/ca-certificates.conf",
	"/etc/passwd",
	"/etc/group",
	"/etc/nsswitch.conf",
	"/etc/localtime",
	"/etc/timezone",
	"/etc/alternatives",
	"/etc/ld.so.cache",
	"/etc/ld.so.conf",
	"/etc/ld.so.conf.d",
	"/etc/os-release",
	"/etc/mime.types",
}

// hostsFile is the wall's /etc/hosts: loopback names only.
const hostsFile = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"

// SystemCandidates lists the system paths planfacts must describe in
// Input.System.
func SystemCandidates() []string {
	out := make([]string, 0, len(systemDirs)+len(etcPaths))
	out = append(out, systemDirs...)
	return append(out, etcPaths...)
}

// IsSystemPath reports whether p lies in the system folders the wall binds by
// path (/usr, /lib*, /bin, /sbin and the short /etc list).
func IsSystemPath(p string) bool {
	for _, r := range systemDirs {
		if within(p, r) {
			return true
		}
	}
	for _, r := range etcPaths {
		if within(p, r) {
			return true
		}
	}
	return false
}

// hostPlaces hold sockets, other users' files or kernel state: never a bind
// source, not even read-only (a socket in a read-only bind still connects).
var hostPlaces = []string{"/run", "/var/run", "/tmp", "/var/tmp", "/dev", "/dev/shm", "/proc", "/sys"}

// writablePlaces are host folders anyone can write: a command there is refused.
var writablePlaces = []string{"/tmp", "/var/tmp", "/dev/shm"}

// within reports whether p is root or below it. Both must be clean absolute
// paths.
func within(p, root string) bool {
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == root || strings.HasPrefix(p, root+"/")
}

// withinAny reports whether p is within any of roots.
func withinAny(p string, roots []string) bool {
	for _, r := range roots {
		if r != "" && within(p, r) {
			return true
		}
	}
	return false
}

// depth counts a clean absolute path's elements.
func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// cleanAbs reports whether p is an absolute path already in clean form, with
// no NUL, no newline and no "." or ".." element.
func cleanAbs(p string) bool {
	return p != "" && filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsAny(p, "\x00\n\r")
}
