package plan

// Kind is what a path is, as lstat saw it.
type Kind string

// The kinds of path the plan tells apart. An empty Kind means the path does
// not exist.
const (
	KindMissing Kind = ""
	KindDir     Kind = "dir"
	KindFile    Kind = "file"
	KindSymlink Kind = "symlink"
	KindSocket  Kind = "socket"
	KindFIFO    Kind = "fifo"
	KindDevice  Kind = "device"
	KindOther   Kind = "other"
)

// FileID names a file by device and inode, so that a mask holds for the file
// and not only for one of its names. The zero FileID means "not known".
type FileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// IsZero reports whether the id was never filled in.
func (f FileID) IsZero() bool { return f.Dev == 0 && f.Ino == 0 }

// PathFacts is what planfacts saw at one path. The plan never looks at the
// filesystem itself; everything it decides from is here.
type PathFacts struct {
	// Path is the path as configured (absolute). Empty means "no such
	// setting" (for example no checkout).
	Path string `json:"path"`
	// Real is the fully resolved path; empty when the path does not exist or
	// cannot be resolved.
	Real string `json:"real,omitempty"`
	// Kind is what lstat(Path) saw: a symlink here means Path itself is one.
	Kind Kind `json:"kind,omitempty"`
	// RealKind is what stat(Real) saw.
	RealKind Kind `json:"realKind,omitempty"`
	// Link is the raw target when Kind is KindSymlink.
	Link string `json:"link,omitempty"`
	// ID, UID, Mode, Nlink and Size describe the object at Real.
	ID    FileID `json:"id"`
	UID   uint32 `json:"uid"`
	Mode  uint32 `json:"mode"`
	Nlink uint64 `json:"nlink,omitempty"`
	Size  int64  `json:"size,omitempty"`
}

// Exists reports whether the path resolved to something.
func (p PathFacts) Exists() bool { return p.Real != "" && p.RealKind != KindMissing }

// Node is one notable entry found while scanning a tree.
type Node struct {
	// Path is the entry's absolute path: the tree's real root joined with the
	// names walked, so no component is a symlink.
	Path  string `json:"path"`
	Kind  Kind   `json:"kind"`
	ID    FileID `json:"id"`
	Nlink uint64 `json:"nlink,omitempty"`
	Size  int64  `json:"size,omitempty"`
	// Target, TargetKind and TargetID describe where a symlink finally
	// resolves on the host; Target is empty when it dangles or loops.
	Target     string `json:"target,omitempty"`
	TargetKind Kind   `json:"targetKind,omitempty"`
	TargetID   FileID `json:"targetId"`
}

// TreeScan is the result of scanning one tree the wall may bind.
type TreeScan struct {
	// Root is the real path of the tree; RootID its device and inode.
	Root   string `json:"root"`
	RootID FileID `json:"rootId"`
	// Incomplete is empty when every entry was seen. Otherwise it says why
	// the scan stopped (too many entries, too deep, unreadable folder) and
	// the tree is not bound at all.
	Incomplete string `json:"incomplete,omitempty"`
	// Entries is how many entries the scan saw.
	Entries int `json:"entries"`
	// Sensitive holds every entry whose name is sensitive (IsSensitiveName)
	// and everything below a shielded folder.
	Sensitive []Node `json:"sensitive,omitempty"`
	// Sockets holds every unix socket file.
	Sockets []Node `json:"sockets,omitempty"`
	// Links holds every regular file with more than one name.
	Links []Node `json:"links,omitempty"`
	// Symlinks holds every symlink with where it resolves.
	Symlinks []Node `json:"symlinks,omitempty"`
}

// Grant is one owner file field of the manifest (sandbox.files.*).
type Grant struct {
	// Field is the environment field the manifest names.
	Field string `json:"field"`
	// Value is the field's value: the path.
	Value string `json:"value"`
	// OwnerTyped is true when the owner typed the value; a value that is only
	// the manifest's default is refused.
	OwnerTyped bool `json:"ownerTyped"`
	// Facts are about Value for read and write grants, and about the folder
	// holding the token file for oauthDir.
	Facts PathFacts `json:"facts"`
}

// StateDir is one state folder from Crow's core table (ADDON_STATE_DIRS) for
// this add-on: a single name directly in the Crow home.
type StateDir struct {
	Name  string    `json:"name"`
	Facts PathFacts `json:"facts"`
}

// DirEntry is one entry of Crow's data folder (for crowDb add-ons).
type DirEntry struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
}

// Profile is what the add-on may reach in files, already joined from its
// manifest, the registry and the owner's values.
type Profile struct {
	Read  []Grant `json:"read,omitempty"`
	Write []Grant `json:"write,omitempty"`
	// OAuthDir, when set, names the owner's token file; its folder is bound
	// read-write.
	OAuthDir *Grant `json:"oauthDir,omitempty"`
	// OwnEnvFile binds <install>/.env read-only on top of its own mask.
	OwnEnvFile bool `json:"ownEnvFile,omitempty"`
	// CrowDB binds Crow's data folder read-write with every entry masked but
	// the database, its journals and the add-on's own folder.
	CrowDB bool `json:"crowDb,omitempty"`
	// DataDirEntries lists the data folder's entries (used with CrowDB).
	DataDirEntries []DirEntry `json:"dataDirEntries,omitempty"`
	// StateDirs come from the core table, passed in by the caller.
	StateDirs []StateDir `json:"stateDirs,omitempty"`
	// FirstParty is true when the add-on's policy is read from Crow's own
	// checkout; only then are state folders bound.
	FirstParty bool `json:"firstParty,omitempty"`
	// Doors is true when the add-on has a door set: the wall hands it a token
	// file at DoorTokenPath.
	Doors bool `json:"doors,omitempty"`
}

// EnvVar is one variable of the add-on's own entry (mcp-addons.json env or a
// connection's values).
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// OwnerTyped is false for a value that only came from a manifest default.
	OwnerTyped bool `json:"ownerTyped"`
}

// EnvInput is everything the child's environment is built from.
type EnvInput struct {
	// Controller is the controller's own environment.
	Controller map[string]string
	// Declared are the keys the add-on's registry entry declares; their
	// values are taken from Controller.
	Declared []string
	// Own are the add-on's own values.
	Own []EnvVar
}

// Command is the resolved launcher.
type Command struct {
	// Facts are about the resolved command; Facts.Real is what runs.
	Facts PathFacts
	// Chain holds the facts of every folder from "/" down to the command's
	// own folder, in that order.
	Chain []PathFacts
	// Args are the arguments after the command.
	Args []string
}

// Input is every fact the plan is built from. It holds no handles and does
// no I/O; planfacts fills it.
type Input struct {
	AddonID string
	// UID is the uid the wall runs as (the controller's).
	UID uint32

	CrowHome PathFacts
	DataDir  PathFacts
	// Checkout may have an empty Path: no checkout known.
	Checkout PathFacts
	// Home is the owner's home; HomeHidden the names of its hidden top-level
	// entries.
	Home       PathFacts
	HomeHidden []string

	// Install is <CROW_HOME>/bundles/<id>.
	Install PathFacts
	// DataFolder is <dataDir>/<id>.
	DataFolder PathFacts
	Command    Command
	// Runtime is the runtime's install folder (node's prefix); empty Path
	// when the command needs none beyond the system folders.
	Runtime PathFacts
	// System holds the facts of every path SystemCandidates names.
	System []PathFacts
	// ControllerPaths are the controller's own folders and sockets (store,
	// control socket, relay folders): never a bind source.
	ControllerPaths []string

	Profile Profile
	Env     EnvInput
	// Scans holds the scan of every tree the plan may bind, keyed by the
	// tree's real root.
	Scans map[string]TreeScan

	// Seccomp is true when the wall gets a seccomp filter (tier walled).
	Seccomp bool
	// ProxyPort is the in-namespace CONNECT proxy's port; 0 means 39080.
	ProxyPort int
	// Entry is the in-namespace entry, which gives the wall its way out.
	// nil builds a wall with no way out at all.
	Entry *EntryInput
}

// MountKind is one kind of step in the wall's mount list.
type MountKind string

// The mount kinds. Every writable host bind is by fd (Bind); RoBind by path is
// only for root-owned system folders.
const (
	// RoBind binds a root-owned system path read-only, by path.
	RoBind MountKind = "ro-bind"
	// RoBindFd binds a path read-only through an fd opened without
	// following symlinks.
	RoBindFd MountKind = "ro-bind-fd"
	// Bind binds a path read-write through an fd opened without following
	// symlinks.
	Bind MountKind = "bind-fd"
	// Tmpfs mounts a fresh writable tmpfs (the wall's /tmp).
	Tmpfs MountKind = "tmpfs"
	// Proc mounts a fresh procfs.
	Proc MountKind = "proc"
	// Dev mounts bubblewrap's minimal /dev.
	Dev MountKind = "dev"
	// Dir creates an empty folder.
	Dir MountKind = "dir"
	// Symlink creates a symlink at Dest pointing to Source.
	Symlink MountKind = "symlink"
	// MaskFile covers a file (or socket, FIFO, device) with the host's
	// /dev/null on a nodev mount: open fails with EACCES.
	MaskFile MountKind = "mask-file"
	// MaskDir covers a folder with an empty tmpfs, remounted read-only once
	// every mount below it is in place.
	MaskDir MountKind = "mask-dir"
	// RoBindData writes Data (or the spawn's data for Slot) into a
	// read-only file at Dest.
	RoBindData MountKind = "ro-bind-data"
	// RemountRo makes an earlier tmpfs read-only.
	RemountRo MountKind = "remount-ro"
)

// Mount is one step of the wall's mount list, applied in order.
type Mount struct {
	Kind MountKind `json:"kind"`
	// Source is the host path (binds) or the link target (Symlink).
	Source string `json:"source,omitempty"`
	// Dest is the path inside the wall.
	Dest string `json:"dest"`
	// Anchor is the trusted folder an fd bind is opened beneath: the opener
	// opens Anchor, then Source relative to it, refusing every symlink.
	Anchor string `json:"anchor,omitempty"`
	// Expect is the object an fd bind must turn out to be; ExpectKind its
	// kind (dir or file).
	Expect     FileID `json:"expect"`
	ExpectKind Kind   `json:"expectKind,omitempty"`
	// Data is RoBindData's fixed content; Slot names content the spawn
	// supplies instead (the door token). Perms are its permission bits.
	Data  []byte `json:"data,omitempty"`
	Slot  string `json:"slot,omitempty"`
	Perms uint32 `json:"perms,omitempty"`
	// Why says in words why this step is there.
	Why string `json:"why"`
}

// IsFd reports whether the mount's source is handed to bubblewrap as an fd.
func (m Mount) IsFd() bool { return m.Kind == RoBindFd || m.Kind == Bind }

// IsHostBind reports whether the mount shows a host path inside the wall.
func (m Mount) IsHostBind() bool { return m.Kind == RoBind || m.IsFd() }

// Namespaces are the namespaces the wall unshares.
type Namespaces struct {
	User          bool `json:"user"`
	DisableUserns bool `json:"disableUserns"`
	PID           bool `json:"pid"`
	IPC           bool `json:"ipc"`
	UTS           bool `json:"uts"`
	Cgroup        bool `json:"cgroup"`
	Net           bool `json:"net"`
}

// Unbound is a tree the plan chose not to bind, and why.
type Unbound struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Plan is the typed, validated description of one walled spawn.
type Plan struct {
	AddonID    string     `json:"addonId"`
	Namespaces Namespaces `json:"namespaces"`
	Hostname   string     `json:"hostname"`
	// Mounts are applied in order.
	Mounts []Mount `json:"mounts"`
	// Chdir is the install folder's real path.
	Chdir string `json:"chdir"`
	// Command is the real path of what runs; Args follow it.
	Command string   `json:"command"`
	Args    []string `json:"args"`
	// Env is the child's whole environment. An empty map is an empty
	// environment, never the parent's.
	Env map[string]string `json:"-"`
	// Seccomp is true when the spawn must carry a seccomp program.
	Seccomp bool `json:"seccomp"`
	// NeverBind lists the paths no host bind may show, and Own the add-on's
	// own folders that are the only exceptions inside them. Validate checks
	// the mounts against both.
	NeverBind []string `json:"neverBind"`
	Own       []string `json:"own"`
	// OwnEnvFile is <install>/.env when it is bound again over its mask.
	OwnEnvFile string `json:"ownEnvFile,omitempty"`
	// Unbound lists trees left out, and why.
	Unbound []Unbound `json:"unbound,omitempty"`
	// DroppedEnv names variables of the add-on's own entry the wall
	// overrode or refused to pass (names only, never values).
	DroppedEnv []string `json:"droppedEnv,omitempty"`
	// Entry, when set, is what the wall runs first (see Argv).
	Entry *EntryPlan `json:"entry,omitempty"`
}
