// Package listener is the listener-owner check: before the relay splices
// a wall's connection to a loopback (or own) address, it finds who listens
// there — from the kernel's table of listening TCP sockets (sock_diag, or
// /proc/net/tcp{,6}), /proc/*/fd and, for root's sockets, the ports
// Docker's containers publish — and refuses unless the listener is this
// add-on's own service. Every error is a refusal.
//
// What it cannot see, and so does not promise:
//   - A same-user process is told from Crow's own by its argv, working
//     folder and executable. Any process of that user can change all three
//     (process.title, chdir after start, a copied binary), so a hostile
//     process of Crow's own user is out of reach of this check (LO-07);
//     the wall's own processes are known by pid and executable instead.
//   - Paths are resolved in the controller's mount namespace, not the
//     holder's; a thread that unshared its fd table is not walked.
//   - A compose project label is believed as written (LO-11): whoever can
//     label a container can run docker, which is root on this host.
package listener

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/addonwall/addonwall/internal/dockerwatch"
)

// Reason is the stable, CamelCase word a refusal carries (for a 403, for
// counting, for logs).
type Reason string

// Refusal reasons.
const (
	// ReasonNoListener: nothing listens on the address and port.
	ReasonNoListener Reason = "NoListener"
	// ReasonPublishedWithoutListener: nothing listens, yet a container
	// publishes the port: Docker forwards it by NAT alone (its userland
	// proxy is off), so there is no socket whose owner can be judged.
	ReasonPublishedWithoutListener Reason = "PublishedWithoutListener"
	// ReasonWallProcess: the socket is held by the wall's own machinery
	// (the controller and its relay, bwrap, the in-namespace entry).
	ReasonWallProcess Reason = "WallProcess"
	// ReasonGatewayProcess: the socket is held by a Crow gateway or
	// satellite, of this or any other checkout.
	ReasonGatewayProcess Reason = "GatewayProcess"
	// ReasonOrphanSocket: no process that can be seen holds the socket.
	ReasonOrphanSocket Reason = "OrphanSocket"
	// ReasonUnderCrowTree: a process holding it runs from, in or with
	// arguments under this Crow's checkout or home.
	ReasonUnderCrowTree Reason = "UnderCrowTree"
	// ReasonDefaultToUserProcess: a manifest default (not an address the
	// owner typed) would reach a process of the controller's user.
	ReasonDefaultToUserProcess Reason = "DefaultToUserProcess"
	// ReasonNotAContainerPort: a root-owned socket on a port no running
	// container publishes (a root daemon).
	ReasonNotAContainerPort Reason = "NotAContainerPort"
	// ReasonUnlabelledContainer: the container publishing the port has no
	// compose project label.
	ReasonUnlabelledContainer Reason = "UnlabelledContainer"
	// ReasonNotInstalled: the container's compose project is no add-on
	// this Crow has installed.
	ReasonNotInstalled Reason = "NotInstalled"
	// ReasonOtherProject: the container belongs to another add-on's
	// compose project (or its labels disagree about which).
	ReasonOtherProject Reason = "OtherProject"
	// ReasonOtherUser: the socket belongs to a user that is neither the
	// controller's nor root (a reverse proxy, another account).
	ReasonOtherUser Reason = "OtherUser"
	// ReasonCheckFailed: the facts could not be read; never a pass.
	ReasonCheckFailed Reason = "CheckFailed"
)

// Refusal is the error Check returns. Detail names pids, container ids and
// which fact matched, never argv text (which can hold secrets).
type Refusal struct {
	Reason Reason
	Addr   netip.AddrPort
	Detail string
	// Err is the cause of a CheckFailed refusal.
	Err error
}

func (r *Refusal) Error() string {
	s := fmt.Sprintf("the listener on %s is refused (%s)", r.Addr, r.Reason)
	if r.Detail != "" {
		s += ": " + r.Detail
	}
	if r.Err != nil {
		s += ": " + r.Err.Error()
	}
	return s
}

func (r *Refusal) Unwrap() error { return r.Err }

// ReasonOf returns the reason of a refusal from Check: "" for nil, and
// CheckFailed for any error that is not a *Refusal.
func ReasonOf(err error) Reason {
	if err == nil {
		return ""
	}
	var r *Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return ReasonCheckFailed
}

// Containers lists the host ports running containers publish;
// *dockerwatch.Engine is one.
type Containers interface {
	PublishedPorts(ctx context.Context) ([]dockerwatch.Published, error)
}

// DefaultTTL is how long an answer is kept for one address while the same
// sockets listen there.
const DefaultTTL = time.Second

// Config configures the check for one walled add-on.
type Config struct {
	// AddonID is the add-on whose wall is connecting. Required.
	AddonID string
	// Installed holds the add-ons this Crow has installed or has an
	// mcp-addons.json entry for. AddonID counts as installed whether or
	// not it is listed.
	Installed map[string]bool
	// Checkout and Home are this Crow's checkout and home. Both are
	// required and absolute; they are compared as given and at their real
	// paths. Neither may be "/".
	Checkout, Home string
	// UID is the controller's (and Crow's) user. If nil, os.Geteuid().
	// With UID 0 (a root gateway) a root-owned socket must pass both the
	// process rules and the container rules (see judgeRootController).
	UID *uint32
	// IsCrowProcess recognizes a Crow gateway or satellite. If nil,
	// IsCrowProcess (the package function) is used.
	IsCrowProcess func(Process) bool
	// IsWallProcess recognizes the wall's own processes (bwrap, the
	// in-namespace entry). If nil, none beyond the built-in ones: the
	// controller's own pid, any process running the controller's own
	// executable, and any process whose executable is named bwrap.
	IsWallProcess func(Process) bool
	// Docker lists published ports. If nil, no container publishes
	// anything, so every root-owned socket is refused.
	Docker Containers
	// TTL is how long an answer is reused while the same sockets listen
	// on the address. Zero means DefaultTTL; negative disables the cache.
	TTL time.Duration
	// ProcRoot is where proc is mounted. If empty, /proc. Under /proc
	// the listening sockets are asked of the kernel (sock_diag); under
	// any other root they are read from its net/tcp and net/tcp6 tables.
	// Tests point it at a folder to cause faults /proc never shows
	// (malformed tables).
	ProcRoot string
}

// Checker is the listener-owner check for one walled add-on. Use New; its
// Check method is an egress.ListenerCheck. It is safe for concurrent use.
type Checker struct {
	cfg     Config
	uid     uint32
	selfPID int
	selfExe string

	// sem lets one check gather facts at a time, so a wall that opens
	// many connections at once costs one walk of /proc, not many.
	sem   chan struct{}
	mu    sync.Mutex
	cache map[cacheKey]cacheEntry
	// wide is set once a socket inode past 32 bits was seen: sock_diag
	// is no longer used (see Check).
	wide atomic.Bool
}

type cacheKey struct {
	addr       netip.AddrPort
	ownerTyped bool
}

type cacheEntry struct {
	at    time.Time
	socks []Socket
	err   error
}

// maxCacheEntries bounds the cache; past it, expired entries are dropped
// and, if that is not enough, all of them.
const maxCacheEntries = 256

// New validates cfg and returns the check.
func New(cfg Config) (*Checker, error) {
	if cfg.AddonID == "" {
		return nil, errors.New("listener check: the add-on id is empty (no check can be made; the wall reaches no loopback listener)")
	}
	for _, p := range []struct{ name, path string }{{"checkout", cfg.Checkout}, {"home", cfg.Home}} {
		if !filepath.IsAbs(p.path) || filepath.Clean(p.path) == "/" {
			return nil, fmt.Errorf("listener check: this Crow's %s %q must be an absolute path other than /", p.name, p.path)
		}
	}
	c := &Checker{cfg: cfg, selfPID: os.Getpid(), sem: make(chan struct{}, 1), cache: map[cacheKey]cacheEntry{}}
	if cfg.UID != nil {
		c.uid = *cfg.UID
	} else {
		c.uid = uint32(os.Geteuid())
	}
	if c.cfg.ProcRoot == "" {
		c.cfg.ProcRoot = "/proc"
	}
	c.cfg.ProcRoot = filepath.Clean(c.cfg.ProcRoot)
	if c.cfg.IsCrowProcess == nil {
		c.cfg.IsCrowProcess = IsCrowProcess
	}
	if c.cfg.TTL == 0 {
		c.cfg.TTL = DefaultTTL
	}
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			c.selfExe = r
		}
	}
	return c, nil
}

// Check returns nil only when every listener on addr may be reached by
// this add-on's wall; otherwise a *Refusal. ownerTyped says whether the
// owner typed the address (a manifest default never reaches a process of
// the controller's user). The listening sockets are read afresh on every
// call; the rest of the answer is reused for the TTL only while the very
// same sockets (by inode) listen there, so a port that changes hands is
// judged again at once.
func (c *Checker) Check(ctx context.Context, addr netip.AddrPort, ownerTyped bool) error {
	if !addr.IsValid() || addr.Port() == 0 {
		return c.refuse(addr, ReasonCheckFailed, "", fmt.Errorf("%q is not an address and port", addr))
	}
	if addr.Addr().Zone() != "" {
		// A zone names a link; a listener check judges a host address.
		return c.refuse(addr, ReasonCheckFailed, "", fmt.Errorf("%s carries an IPv6 zone", addr))
	}
	err := c.check(ctx, addr, ownerTyped)
	if errors.Is(err, errWideInodes) {
		c.wide.Store(true)
		// This kernel numbers sockets past sock_diag's 32 bits: from
		// now on the listeners are read from /proc/net/tcp{,6}, whose
		// inodes are whole (so this cannot recur), and this check is
		// made again from there.
		err = c.check(ctx, addr, ownerTyped)
	}
	return err
}

func (c *Checker) check(ctx context.Context, addr netip.AddrPort, ownerTyped bool) error {
	all, narrow, err := c.listeners()
	if err != nil {
		return c.refuse(addr, ReasonCheckFailed, "", err)
	}
	socks := matching(all, addr)
	if len(socks) == 0 {
		return c.noListener(ctx, addr)
	}
	key := cacheKey{addr, ownerTyped}
	if err, ok := c.cached(key, socks); ok {
		return err
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return c.refuse(addr, ReasonCheckFailed, "", ctx.Err())
	}
	defer func() { <-c.sem }()
	// Another check may have answered while this one waited.
	if err, ok := c.cached(key, socks); ok {
		return err
	}
	err = c.judge(ctx, addr, socks, ownerTyped, narrow)
	if ReasonOf(err) != ReasonCheckFailed {
		c.store(key, socks, err)
	}
	return err
}

// listeners reads every listening TCP socket, from sock_diag when proc
// is the real /proc (narrow: 32-bit inodes), else, and on a kernel
// without sock_diag for TCP, from ProcRoot's net/tcp{,6}.
func (c *Checker) listeners() (socks []Socket, narrow bool, err error) {
	if c.cfg.ProcRoot == "/proc" && !c.wide.Load() {
		socks, err := readListenersDiag()
		if !errors.Is(err, errNoDiag) {
			return socks, err == nil, err
		}
	}
	socks, err = readListeners(c.cfg.ProcRoot)
	return socks, false, err
}

// scanFor is the walk for the holders of inodes among uid's processes.
func (c *Checker) scanFor(uid uint32, inodes map[uint64]bool, narrow bool) scan {
	s := scan{procRoot: c.cfg.ProcRoot, uid: uid, want: inodes, narrow: narrow}
	if c.cfg.ProcRoot == "/proc" {
		s.self = c.selfPID
	}
	return s
}

// noListener refuses an address nothing listens on, naming Docker's
// NAT-only forwarding when a container publishes the port: the relay's
// dial then reached the container with no listening socket to judge.
func (c *Checker) noListener(ctx context.Context, addr netip.AddrPort) error {
	if c.cfg.Docker != nil {
		select {
		case c.sem <- struct{}{}:
			pub, err := c.cfg.Docker.PublishedPorts(ctx)
			<-c.sem
			if err == nil {
				for _, p := range pub {
					if publishes(p, addr) {
						return c.refuse(addr, ReasonPublishedWithoutListener, fmt.Sprintf("container %s publishes the port but no socket listens (Docker's userland proxy is off); such ports are refused", shortID(p.ContainerID)), nil)
					}
				}
			}
		case <-ctx.Done():
		}
	}
	return c.refuse(addr, ReasonNoListener, "nothing listens there", nil)
}

func (c *Checker) cached(key cacheKey, socks []Socket) (error, bool) {
	if c.cfg.TTL < 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.cache[key]
	if !ok || time.Since(e.at) >= c.cfg.TTL || !slices.Equal(e.socks, socks) {
		return nil, false
	}
	return e.err, true
}

func (c *Checker) store(key cacheKey, socks []Socket, err error) {
	if c.cfg.TTL < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.cache) >= maxCacheEntries {
		for k, e := range c.cache {
			if time.Since(e.at) >= c.cfg.TTL {
				delete(c.cache, k)
			}
		}
		if len(c.cache) >= maxCacheEntries {
			clear(c.cache)
		}
	}
	c.cache[key] = cacheEntry{at: time.Now(), socks: socks, err: err}
}

func (c *Checker) refuse(addr netip.AddrPort, r Reason, detail string, err error) error {
	return &Refusal{Reason: r, Addr: addr, Detail: detail, Err: err}
}

// judge applies the seed's steps 2–4 to every listener; the first refusal
// is the answer.
func (c *Checker) judge(ctx context.Context, addr netip.AddrPort, socks []Socket, ownerTyped, narrow bool) error {
	trees, err := c.roots(c.cfg.Checkout, c.cfg.Home)
	if err != nil {
		return c.refuse(addr, ReasonCheckFailed, "", err)
	}
	byUID := map[uint32]map[uint64]bool{}
	for _, s := range socks {
		if s.UID != c.uid && s.UID != 0 {
			return c.refuse(addr, ReasonOtherUser, fmt.Sprintf("the socket belongs to uid %d", s.UID), nil)
		}
		if s.Inode == 0 {
			return c.refuse(addr, ReasonOrphanSocket, "the socket has no inode", nil)
		}
		if byUID[s.UID] == nil {
			byUID[s.UID] = map[uint64]bool{}
		}
		byUID[s.UID][s.Inode] = true
	}
	if c.uid == 0 {
		// Every socket here is root's (any other was refused above).
		return c.judgeRootController(ctx, addr, byUID[0], trees, narrow)
	}
	// The controller's user: every process holding each socket.
	if inodes := byUID[c.uid]; inodes != nil {
		if err := c.judgeProcesses(ctx, addr, inodes, trees, ownerTyped, narrow); err != nil {
			return err
		}
	}
	if byUID[0] != nil {
		if err := c.judgeRoot(ctx, addr); err != nil {
			return err
		}
	}
	return nil
}

// judgeRootController judges root's sockets for a root controller (CI
// runs it so), whose user is also docker-proxy's and every root daemon's:
// each must pass the process rules (step 2) and the container rules
// (step 3). A manifest default may reach a container, so only the
// process refusals apply, never DefaultToUserProcess.
//
// Root cannot always read every root process's descriptors (an LSM, or a
// supervisor outside the controller's reach such as this CI host's pid
// 1), and holders reports those processes as blind. A non-root
// controller refuses while any process of its user is blind; a root
// controller does so too unless the container rules pass. Once they do,
// blind processes are tolerated, because then:
//   - Docker (root, believed as LO-11 says) names a running container of
//     this add-on's project, or the named exception, as publishing
//     exactly this address and port, so the one that should listen is
//     its userland proxy.
//   - At least one holder of every socket is seen, and every seen holder
//     passes the process rules, so no gateway, wall process or process
//     under Crow's tree holds it where the check can look.
//   - No second socket can sit on the same address and port beside
//     docker-proxy's: the kernel refuses the bind unless both set
//     SO_REUSEPORT under one uid, which docker-proxy does not. Any other
//     listener that would answer (a wildcard one, say) is its own entry
//     in the socket table and is judged on its own.
//   - What is left is a blind process sharing this very socket: it got
//     it from docker-proxy or dockerd by fork or SCM_RIGHTS, or took it
//     with pidfd_getfd, which needs ptrace rights over a root process.
//     Each is root acting with the powers that could as well relabel the
//     container, which the container rules already believe.
//
// A socket no seen process holds is still refused: OrphanSocket when
// every root process could be read, CheckFailed when a blind one might
// be its holder. Only permission errors make a process blind; any other
// error reading the descriptors refuses (CheckFailed).
func (c *Checker) judgeRootController(ctx context.Context, addr netip.AddrPort, inodes map[uint64]bool, trees []string, narrow bool) error {
	held, blind, err := holders(ctx, c.scanFor(0, inodes, narrow))
	if err != nil {
		return c.refuse(addr, ReasonCheckFailed, "", err)
	}
	// The processes that can be seen are judged first, so a refusal
	// names the most telling fact (the controller's own listener is a
	// WallProcess before it is no container's port).
	seen, err := c.judgeHolders(addr, inodes, held, trees, true)
	if err != nil {
		return err
	}
	if err := c.judgeRoot(ctx, addr); err != nil {
		return err
	}
	for _, ino := range sortedInodes(inodes) {
		if seen[ino] > 0 {
			continue
		}
		if len(blind) > 0 {
			return c.refuse(addr, ReasonCheckFailed, fmt.Sprintf("no root process that can be read holds socket inode %d, and the descriptors of %d root process(es) cannot be read (pid %d first): its holder cannot be judged", ino, len(blind), blind[0]), nil)
		}
		return c.refuse(addr, ReasonOrphanSocket, fmt.Sprintf("no process holds socket inode %d", ino), nil)
	}
	return nil
}

func (c *Checker) judgeProcesses(ctx context.Context, addr netip.AddrPort, inodes map[uint64]bool, trees []string, ownerTyped, narrow bool) error {
	held, blind, err := holders(ctx, c.scanFor(c.uid, inodes, narrow))
	if err != nil {
		return c.refuse(addr, ReasonCheckFailed, "", err)
	}
	// The processes that can be seen are judged first, so a refusal names
	// the most telling fact; a process that cannot be seen refuses last.
	seen, err := c.judgeHolders(addr, inodes, held, trees, ownerTyped)
	if err != nil {
		return err
	}
	for _, ino := range sortedInodes(inodes) {
		if seen[ino] == 0 && len(blind) == 0 {
			return c.refuse(addr, ReasonOrphanSocket, fmt.Sprintf("no process holds socket inode %d", ino), nil)
		}
	}
	if len(blind) > 0 {
		return c.refuse(addr, ReasonCheckFailed, fmt.Sprintf("the descriptors of %d process(es) of uid %d cannot be read (pid %d first), and any of them may hold the socket", len(blind), c.uid, blind[0]), nil)
	}
	return nil
}

// judgeHolders applies the process rules to every process that holds one
// of inodes and can still be read, and returns how many did per inode.
func (c *Checker) judgeHolders(addr netip.AddrPort, inodes map[uint64]bool, held map[uint64][]int, trees []string, ownerTyped bool) (map[uint64]int, error) {
	seen := make(map[uint64]int, len(inodes))
	for _, ino := range sortedInodes(inodes) {
		for _, pid := range held[ino] {
			p, ok, err := readProcess(c.cfg.ProcRoot, pid)
			if err != nil {
				return nil, c.refuse(addr, ReasonCheckFailed, "", err)
			}
			if !ok {
				continue
			}
			seen[ino]++
			if r, detail := c.judgeProcess(p, trees, ownerTyped); r != "" {
				return nil, c.refuse(addr, r, detail, nil)
			}
		}
	}
	return seen, nil
}

func sortedInodes(inodes map[uint64]bool) []uint64 {
	return slices.Sorted(maps.Keys(inodes))
}

// judgeProcess is the seed's step 2 for one process holding the socket.
func (c *Checker) judgeProcess(p Process, trees []string, ownerTyped bool) (Reason, string) {
	switch {
	case p.PID == c.selfPID:
		return ReasonWallProcess, fmt.Sprintf("pid %d is the controller itself", p.PID)
	case c.selfExe != "" && p.Exe == c.selfExe:
		return ReasonWallProcess, fmt.Sprintf("pid %d runs the controller's own executable", p.PID)
	case filepath.Base(p.Exe) == "bwrap":
		return ReasonWallProcess, fmt.Sprintf("pid %d is bubblewrap", p.PID)
	case c.cfg.IsWallProcess != nil && c.cfg.IsWallProcess(p):
		return ReasonWallProcess, fmt.Sprintf("pid %d is one of the wall's own processes", p.PID)
	case c.cfg.IsCrowProcess(p):
		return ReasonGatewayProcess, fmt.Sprintf("pid %d is a Crow gateway or satellite", p.PID)
	}
	if what := underTree(p, trees); what != "" {
		return ReasonUnderCrowTree, fmt.Sprintf("the %s of pid %d lies under this Crow's checkout or home", what, p.PID)
	}
	if !ownerTyped {
		return ReasonDefaultToUserProcess, fmt.Sprintf("pid %d is a process of uid %d and the address is only a manifest default", p.PID, c.uid)
	}
	return "", ""
}

// judgeRoot is the seed's step 3: the port must be published by a
// container of this add-on's compose project (or the named exception).
func (c *Checker) judgeRoot(ctx context.Context, addr netip.AddrPort) error {
	if c.cfg.Docker == nil {
		return c.refuse(addr, ReasonNotAContainerPort, "the socket is root's and no Docker engine is configured", nil)
	}
	pub, err := c.cfg.Docker.PublishedPorts(ctx)
	if err != nil {
		return c.refuse(addr, ReasonCheckFailed, "the socket is root's and Docker's published ports cannot be read", err)
	}
	bundles, err := c.roots(filepath.Join(c.cfg.Checkout, "bundles"))
	if err != nil {
		return c.refuse(addr, ReasonCheckFailed, "", err)
	}
	rules := containerRules{
		addonID:   c.cfg.AddonID,
		installed: func(id string) bool { return id == c.cfg.AddonID || c.cfg.Installed[id] },
		bundles:   bundles,
		resolve:   resolveExisting,
	}
	if r, detail := judgeContainers(pub, addr, rules); r != "" {
		return c.refuse(addr, r, detail, nil)
	}
	return nil
}

// roots returns each path as given (cleaned) and at its real path. A path
// that does not exist has only its given form; any other error fails.
func (c *Checker) roots(paths ...string) ([]string, error) {
	var out []string
	for _, p := range paths {
		p = filepath.Clean(p)
		out = append(out, p)
		r, err := filepath.EvalSymlinks(p)
		switch {
		case err == nil:
			if r != p {
				out = append(out, r)
			}
		case errors.Is(err, fs.ErrNotExist):
		default:
			return nil, fmt.Errorf("resolving %s: %w", p, err)
		}
	}
	return out, nil
}
