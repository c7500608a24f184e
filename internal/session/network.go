package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/crowhome"
	"github.com/addonwall/addonwall/internal/doors"
	"github.com/addonwall/addonwall/internal/egress"
	"github.com/addonwall/addonwall/internal/plan"
	"github.com/addonwall/addonwall/internal/planfacts"
	"github.com/addonwall/addonwall/internal/wallentry"
)

// A walled spawn's way out: one relay per spawn, in this process, on a
// unix socket in a fresh 0700 folder under the controller's own folder;
// the folder is bound read-only into the wall, where the entry (this same
// binary) listens for the add-on and carries every connection to it. The
// relay lives exactly as long as the spawn, and its refusals are counted
// per add-on for status.

// gatewayPorts are the gateway's own loopback ports. A manifest default
// naming one is refused: the gateway is reached through doors only.
var gatewayPorts = []uint16{3001, 3002, 3004}

// entryStartWait bounds how long a wall may take from bubblewrap's report
// to the add-on's own process existing under the entry.
const entryStartWait = 10 * time.Second

// egressHintEvery bounds how often refusals wake the reconciler.
const egressHintEvery = time.Second

// latestShown is how many refusals status shows (its field allows 10).
const latestShown = 10

// TestOnlyEgress replaces how the relays reach the world. It exists for
// tests only, which must keep their traffic on loopback: the policy still
// judges the real resolved address, and these decide what a name
// resolves to and where a checked address is actually dialled (DESIGN §12).
type TestOnlyEgress struct {
	Resolver egress.Resolver
	Dialer   egress.Dialer
}

// networkRules are the relay's rules for one spawn, from the profile and
// the entry's values: the internet switch, and one listed entry for each
// network.hosts field whose value may be listed. dropped says, for each
// value left out, the field and why. Owner-typed values are never quoted
// whole in it: a URL can carry a password.
func networkRules(prof wallsv1.Profile, env crowhome.Env) (rules egress.Rules, dropped []string) {
	rules.Internet = prof.Network.Internet
	drop := func(field, format string, args ...any) {
		dropped = append(dropped, fmt.Sprintf("network.hosts %s: ", field)+fmt.Sprintf(format, args...))
	}
	for _, f := range prof.Network.Hosts {
		v, ok := env.Get(f.Name)
		if !ok || v == "" {
			continue // nothing to list
		}
		authority, scheme, err := hostsValue(v)
		if err != nil {
			drop(f.Name, "its value is not host:port or a URL with a host, so it is not listed: %v", err)
			continue
		}
		l, err := egress.ParseListed(authority, true)
		if err != nil {
			drop(f.Name, "its value is not an address the relay can list: %v", err)
			continue
		}
		loopback := isLoopbackHost(l.Host)
		if f.OwnerTyped {
			// A loopback address is reached through its forwarder,
			// which speaks CONNECT; other plain-HTTP values through
			// the proxy, one request at a time.
			if scheme == "http" && !loopback {
				if l, err = egress.ParseListed("http://"+authority, true); err != nil {
					drop(f.Name, "its value is not an address the relay can list: %v", err)
					continue
				}
			}
			rules.Listed = appendListed(rules.Listed, l)
			continue
		}
		// A manifest default is not a choice the owner made.
		switch {
		case loopback && slices.Contains(gatewayPorts, l.Port):
			drop(f.Name, "the manifest default %s names the gateway's own port, which is refused", l)
		case loopback && !publishesLoopback(prof.ComposePorts, l.Port):
			drop(f.Name, "the manifest default %s is a port this add-on's compose file does not publish on 127.0.0.1/tcp, so it is dropped", l)
		case loopback:
			l.OwnerTyped = false
			rules.Listed = appendListed(rules.Listed, l)
		case scheme == "https" && l.Port == 443 && prof.Network.Internet:
			// The internet shape already covers it, and the relay
			// judges its every address like any other name's.
		case scheme == "https" && l.Port == 443:
			drop(f.Name, "the manifest default %s is a public HTTPS address, and this add-on has no internet, so it is refused", l)
		default:
			drop(f.Name, "the manifest default %s is not a loopback address this add-on's compose file publishes; the owner must type it, so it is dropped", l)
		}
	}
	return rules, dropped
}

// parseDenyList reads the WallHost's spec.egressDenyList: CIDRs, or bare
// addresses meaning one address. An entry that is neither is an error, not
// a skip: a deny list the relay cannot hold whole would let through what
// the operator refused.
func parseDenyList(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Zone() == "" {
			out = append(out, p.Masked())
			continue
		}
		if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		return nil, fmt.Errorf("WallHost spec.egressDenyList[%d] %q is not a CIDR or an IP address; no wall starts until it is fixed", i, s)
	}
	return out, nil
}

func appendListed(ls []egress.Listed, l egress.Listed) []egress.Listed {
	for _, o := range ls {
		if o == l {
			return ls
		}
	}
	return append(ls, l)
}

// hostsValue reads one network.hosts value: "host:port", or a URL
// "scheme://[userinfo@]host[:port][/…]" whose port defaults to 443 for
// https and 80 for http (any other scheme needs one). It returns the
// value's "host:port" (the userinfo and path dropped: the entry is the
// host and port, never more) and the scheme in lower case.
func hostsValue(v string) (authority, scheme string, err error) {
	rest := v
	if i := strings.Index(v, "://"); i >= 0 {
		scheme = strings.ToLower(v[:i])
		if scheme == "" || strings.IndexFunc(scheme, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')
		}) >= 0 {
			return "", "", errors.New("the scheme is not a scheme")
		}
		rest = v[i+3:]
		if j := strings.IndexAny(rest, "/?#"); j >= 0 {
			rest = rest[:j]
		}
		if k := strings.LastIndexByte(rest, '@'); k >= 0 {
			rest = rest[k+1:]
		}
	}
	if rest == "" {
		return "", "", errors.New("there is no host")
	}
	hasPort := strings.Contains(rest, "]:") || (!strings.HasPrefix(rest, "[") && strings.Contains(rest, ":"))
	if !hasPort {
		switch scheme {
		case "https":
			rest += ":443"
		case "http":
			rest += ":80"
		default:
			return "", "", errors.New("there is no port")
		}
	}
	return rest, scheme, nil
}

// isLoopbackHost reports whether a normalized host is this machine's
// loopback: "localhost" or a loopback literal.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// publishesLoopback reports whether the add-on's own compose file
// publishes port on 127.0.0.1 over TCP.
func publishesLoopback(ports []wallsv1.ComposePort, port uint16) bool {
	for _, p := range ports {
		if p.Address == "127.0.0.1" && p.Protocol == "tcp" && p.Port == int32(port) {
			return true
		}
	}
	return false
}

// wallNetwork is one spawn's network: its relay and the entry that reaches
// it. The zero value is ready for open.
type wallNetwork struct {
	relay     *egress.Relay
	relayDir  string // real path
	rules     egress.Rules
	entry     wallentry.Config
	binary    string
	dropped   []string
	door      wallDoor
	closeOnce sync.Once
}

// open makes the spawn's relay from the add-on's profile and entry, its
// door when set has doors, and the entry's config. Any error means no
// wall: the add-on stays off.
func (n *wallNetwork) open(ctx context.Context, p *WallPreparer, w *wallsv1.AddonWall, e crowhome.Entry, set doors.Set) error {
	n.rules, n.dropped = networkRules(w.Spec.Profile, e.Env)
	if p.EgressDeny != nil {
		list, err := p.EgressDeny(ctx)
		if err != nil {
			return fail(wallsv1.ReasonWallFailed, "reading the operator's egress deny list: %w", err)
		}
		if n.rules.Deny, err = parseDenyList(list); err != nil {
			return fail(wallsv1.ReasonInvalidInput, "%w", err)
		}
	}
	bin, err := p.entryBinary()
	if err != nil {
		return fail(wallsv1.ReasonWallFailed, "%w", err)
	}
	n.binary = bin
	base := filepath.Join(p.Paths.StateDir(), "relay")
	if err := ensurePrivateDir(base); err != nil {
		return fail(wallsv1.ReasonWallFailed, "%w", err)
	}
	name := make([]byte, 6)
	if _, err := rand.Read(name); err != nil {
		return fail(wallsv1.ReasonWallFailed, "naming its relay's folder: %w", err)
	}
	cfg := egress.Config{
		SocketDir:     filepath.Join(base, hex.EncodeToString(name)),
		Rules:         n.rules,
		Resolver:      net.DefaultResolver,
		Dialer:        &net.Dialer{},
		ListenerCheck: p.listenerCheck(w.Name),
		Log:           p.Log.WithName("relay").WithValues("addon", w.Name),
		OnRefusal:     func(r egress.Refusal) { p.countRefusal(w.Name, r) },
	}
	if t := p.TestOnlyEgress; t != nil {
		cfg.Resolver, cfg.Dialer = t.Resolver, t.Dialer
	}
	n.relay, err = egress.New(cfg)
	if err != nil {
		return fail(wallsv1.ReasonWallFailed, "starting its relay: %w", err)
	}
	n.relayDir, err = filepath.EvalSymlinks(filepath.Dir(n.relay.SocketPath()))
	if err != nil {
		n.close()
		return fail(wallsv1.ReasonWallFailed, "finding its relay's folder: %w", err)
	}
	if !set.Empty() {
		if err := n.door.open(p, w.Name, set, filepath.Dir(n.relay.SocketPath())); err != nil {
			n.close()
			return err
		}
	}
	var skipped []string
	n.entry, skipped = wallentry.ConfigFor(n.rules, plan.RelayDirPath+"/"+egress.SocketName, n.door.entry)
	n.dropped = append(n.dropped, skipped...)
	return nil
}

// request is the entry as planfacts gathers it.
func (n *wallNetwork) request() (*planfacts.EntryRequest, error) {
	cfg, err := n.entry.Marshal()
	if err != nil {
		return nil, fail(wallsv1.ReasonPlanFailed, "its entry's config: %w", err)
	}
	return &planfacts.EntryRequest{
		Binary:   n.binary,
		Args:     []string{"wall-entry", "--config", plan.EntryConfigPath},
		Config:   cfg,
		RelayDir: n.relayDir,
	}, nil
}

// close ends the relay and removes its folder. It is safe to call on a
// network that never opened, and more than once.
func (n *wallNetwork) close() {
	n.closeOnce.Do(func() {
		n.door.close()
		if n.relay != nil {
			_ = n.relay.Close()
		}
	})
}

// ensurePrivateDir makes dir (0700) if it is missing and checks that it is
// a real folder of this process's user that nobody else can enter.
func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making the relays' folder %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("looking at the relays' folder %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("the relays' folder %s is not a 0700 folder of this user; move it away", dir)
	}
	return nil
}

// entryBinary is the addonwall binary bound into every wall: EntryBinary,
// else this process's own executable, at its real path.
// EntryBinaryName is the small entry binary (cmd/addonwall-entry) the
// controller prefers when it sits beside the addonwall binary.
const EntryBinaryName = "addonwall-entry"

func (p *WallPreparer) entryBinary() (string, error) {
	bin := p.EntryBinary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("finding addonwall's own binary, which runs as the wall's entry: %w", err)
		}
		bin = exe
		// The small entry beside it starts in milliseconds; this binary
		// (`addonwall wall-entry`) does the same, more slowly.
		if fi, err := os.Stat(filepath.Join(filepath.Dir(exe), EntryBinaryName)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			bin = filepath.Join(filepath.Dir(exe), EntryBinaryName)
		}
	}
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "", fmt.Errorf("finding addonwall's binary %s, which runs as the wall's entry: %w", bin, err)
	}
	return real, nil
}

// egressCounts are one add-on's relay refusals under one plan, summed over
// its spawns.
type egressCounts struct {
	planHash string
	refusals map[string]int64
	latest   []string
	hinted   time.Time
}

// egressObserver is a Preparer whose relays count refusals; the Manager
// shows them in Observed.
type egressObserver interface {
	egressObserved(id string) (map[string]int64, []string)
	notifyEgress(hint func(id string))
	forgetEgress(id string)
}

var _ egressObserver = (*WallPreparer)(nil)

// planEgress starts the counts afresh when the add-on's plan changed:
// status shows the refusals of the current plan.
func (p *WallPreparer) planEgress(id, planHash string) {
	p.egressMu.Lock()
	defer p.egressMu.Unlock()
	if p.egress == nil {
		p.egress = map[string]*egressCounts{}
	}
	if c := p.egress[id]; c == nil || c.planHash != planHash {
		p.egress[id] = &egressCounts{planHash: planHash}
	}
}

func (p *WallPreparer) countRefusal(id string, r egress.Refusal) {
	p.egressMu.Lock()
	c := p.egress[id]
	if c == nil {
		c = &egressCounts{}
		if p.egress == nil {
			p.egress = map[string]*egressCounts{}
		}
		p.egress[id] = c
	}
	if c.refusals == nil {
		c.refusals = map[string]int64{}
	}
	c.refusals[string(r.Reason)]++
	c.latest = append([]string{r.String()}, c.latest...)
	if len(c.latest) > latestShown {
		c.latest = c.latest[:latestShown]
	}
	// A wall that hammers refused targets must not keep the reconciler
	// busy: at most one wake-up a second; the session's end wakes it too.
	hint := p.egressHint
	wake := hint != nil && time.Since(c.hinted) >= egressHintEvery
	if wake {
		c.hinted = time.Now()
	}
	p.egressMu.Unlock()
	if wake {
		hint(id)
	}
}

func (p *WallPreparer) egressObserved(id string) (map[string]int64, []string) {
	p.egressMu.Lock()
	defer p.egressMu.Unlock()
	c := p.egress[id]
	if c == nil {
		return nil, nil
	}
	return copyCounts(c.refusals), append([]string(nil), c.latest...)
}

func (p *WallPreparer) notifyEgress(hint func(id string)) {
	p.egressMu.Lock()
	p.egressHint = hint
	p.egressMu.Unlock()
}

func (p *WallPreparer) forgetEgress(id string) {
	p.egressMu.Lock()
	delete(p.egress, id)
	p.egressMu.Unlock()
}

// walledProcess is a walled child with its network: the relay is closed
// once the child has ended, and Pid is the add-on's own process, under
// the entry.
type walledProcess struct {
	*bwrapProcess
	net   *wallNetwork
	addon int
	stop  func() bool
}

// newWalledProcess waits until the entry has started the add-on, so that
// attestation and the limits read the add-on itself. A wall that ends
// first is returned as it is (its Wait says how it ended); one whose
// add-on does not appear in time is ended.
func newWalledProcess(ctx context.Context, b *bwrapProcess, n *wallNetwork) (*walledProcess, error) {
	wp := &walledProcess{bwrapProcess: b, net: n}
	// A controller that stops ends the wall (bwrap.Start ties it to ctx)
	// and with it the relay, even if nobody waits.
	wp.stop = context.AfterFunc(ctx, n.close)
	deadline := time.Now().Add(entryStartWait)
	for {
		if pid, err := addonPid(b.c.CommandPid); err == nil && pid > 0 {
			wp.addon = pid
			return wp, nil
		}
		select {
		case <-b.c.Done():
			return wp, nil
		case <-ctx.Done():
			return wp, nil
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Kill()
			b.Wait()
			wp.stop()
			n.close()
			return nil, fail(wallsv1.ReasonWallFailed, "its wall's entry did not start the add-on within %s", entryStartWait)
		}
	}
}

// addonPid finds the add-on: the child of the entry that runs a program of
// its own, the entry being the one child of the wall's pid 1. The entry is
// multi-threaded, so every thread's children are read. A child that still
// runs the entry's own image is not the add-on: a fork is the entry until it
// execs, and the Go runtime in the entry forks a short-lived child of its
// own (the CLONE_PIDFD check) before it starts the add-on. Taking that one
// would attest, watch and end a process that is already gone.
func addonPid(entryPid func() (int, error)) (int, error) {
	entry, err := entryPid()
	if err != nil || entry <= 0 {
		return 0, err
	}
	entryExe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", entry))
	if err != nil {
		return 0, nil // not readable yet, or gone: the caller asks again
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", entry))
	if err != nil {
		return 0, err
	}
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", entry, t.Name()))
		if err != nil {
			continue // a thread that just ended
		}
		for _, f := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				return 0, err
			}
			if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe != entryExe {
				return pid, nil
			}
		}
	}
	return 0, nil
}

func (w *walledProcess) Pid() int {
	if w.addon > 0 {
		return w.addon
	}
	return w.bwrapProcess.Pid()
}

func (w *walledProcess) Wait() Exit {
	x := w.bwrapProcess.Wait()
	w.stop()
	w.net.close()
	return x
}

// networkDropped says, at admission, which network.hosts values a spawn
// will leave out and why: the same rules each spawn applies.
func networkDropped(prof wallsv1.Profile, env crowhome.Env, door wallentry.Door) []string {
	rules, dropped := networkRules(prof, env)
	_, skipped := wallentry.ConfigFor(rules, plan.RelayDirPath+"/"+egress.SocketName, door)
	return append(dropped, skipped...)
}

// listenerCheck is the add-on's listener-owner check, or nil (refuse).
func (p *WallPreparer) listenerCheck(id string) egress.ListenerCheck {
	if p.ListenerFor == nil {
		return nil
	}
	return p.ListenerFor(id)
}

// SweepRelays removes the relay folders a previous controller left behind
// when it was killed before its spawns' cleanup ran. It must run before
// this controller starts any wall: every folder there is then a dead
// spawn's (one controller per Crow home holds the store's lock). It
// returns how many were removed.
func (p *WallPreparer) SweepRelays() (int, error) {
	base := filepath.Join(p.Paths.StateDir(), "relay")
	if _, err := os.Lstat(base); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err := ensurePrivateDir(base); err != nil {
		return 0, fmt.Errorf("%w (left relay folders are not swept; walls still start in fresh folders)", err)
	}
	ents, err := os.ReadDir(base)
	if err != nil {
		return 0, fmt.Errorf("listing the relays' folder %s: %w", base, err)
	}
	n := 0
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(base, e.Name())); err != nil {
			return n, fmt.Errorf("removing the left relay folder %s: %w", e.Name(), err)
		}
		n++
	}
	return n, nil
}
