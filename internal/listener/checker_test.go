package listener

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/addonwall/addonwall/internal/dockerwatch"
	"github.com/addonwall/addonwall/internal/egress"
)

// The tests play a non-root Crow: its user is nobody, services run as
// nobody (the same user), as root or as a third uid. Every refusal sits
// beside an allowed service on the same path.

func TestSameUserService(t *testing.T) {
	needRoot(t)
	c := newCrow(t)
	plain := openDir(t, "svc")
	ch := c.checker(t, nil)

	// LO-06: an unrelated service of the same user, outside Crow's tree.
	ok := start(t, "127.0.0.1:0", svcOpts{uid: nobody, dir: plain})
	expect(t, ch, ok.Addr, true, "")
	expect(t, ch, ok.Addr, false, ReasonDefaultToUserProcess)

	// The same address through the other spellings the relay may hand in.
	expect(t, ch, netip.AddrPortFrom(netip.MustParseAddr("::ffff:127.0.0.1"), ok.Addr.Port()), true, "")
}

func TestUnderCrowTree(t *testing.T) {
	needRoot(t)
	c := newCrow(t)
	plain := openDir(t, "svc")
	ch := c.checker(t, nil)

	exeInCheckout := filepath.Join(c.checkout, "tools", "tinylisten")
	copyFile(t, tinylisten, exeInCheckout)
	// LO-07: a path that reaches the checkout only through a symlink.
	link := filepath.Join(openDir(t, "lnk"), "x")
	if err := os.Symlink(c.checkout, link); err != nil {
		t.Fatal(err)
	}
	benign := filepath.Join(openDir(t, "lnk"), "x")
	if err := os.Symlink(plain, benign); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		o    svcOpts
		want Reason
	}{
		{"positive control: outside the tree", svcOpts{dir: plain, extra: []string{"/srv/x.js"}}, ""},
		{"positive control: through a symlink elsewhere", svcOpts{dir: plain, extra: []string{benign + "/server/index.js"}}, ""},
		{"working folder in the checkout", svcOpts{dir: c.checkout}, ReasonUnderCrowTree},
		{"working folder in the home", svcOpts{dir: filepath.Join(c.home)}, ReasonUnderCrowTree},
		{"argv element in the checkout", svcOpts{dir: plain, extra: []string{c.checkout + "/bundles/x/server.js"}}, ReasonUnderCrowTree},
		{"argv element as --flag=path", svcOpts{dir: plain, extra: []string{"--require=" + c.home + "/bundles/x/hook.js"}}, ReasonUnderCrowTree},
		{"argv element through a symlink", svcOpts{dir: plain, extra: []string{link + "/servers/missing.js"}}, ReasonUnderCrowTree},
		{"argv element relative to the working folder", svcOpts{dir: plain, extra: []string{"../" + filepath.Base(c.checkout) + "/x.js"}}, ReasonUnderCrowTree},
		{"executable in the checkout", svcOpts{dir: plain, exe: exeInCheckout}, ReasonUnderCrowTree},
		{"executable in the checkout, argv[0] renamed", svcOpts{dir: plain, exe: exeInCheckout, arg0: "python3"}, ReasonUnderCrowTree},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.uid = nobody
			s := start(t, "127.0.0.1:0", tc.o)
			expect(t, ch, s.Addr, true, tc.want)
		})
	}
}

func TestGatewayAndWallProcesses(t *testing.T) {
	needRoot(t)
	c := newCrow(t)
	plain := openDir(t, "svc")
	other := openDir(t, "otherco") // a co-hosted Crow's checkout
	gwDir := filepath.Join(other, "servers", "gateway")
	if err := os.MkdirAll(gwDir, 0o755); err != nil {
		t.Fatal(err)
	}

	ok := start(t, "127.0.0.1:0", svcOpts{uid: nobody, dir: plain})
	var wallPID atomic.Int64
	ch := c.checker(t, func(cfg *Config) {
		cfg.IsWallProcess = func(p Process) bool { return int64(p.PID) == wallPID.Load() }
	})
	expect(t, ch, ok.Addr, true, "") // positive control

	// LO-03: a gateway or satellite of another checkout, by argv.
	for _, o := range []svcOpts{
		{dir: plain, arg0: "node", extra: []string{other + "/servers/gateway/index.js"}},
		{dir: plain, arg0: "node", extra: []string{"servers/gateway/index.js"}},
		{dir: gwDir, arg0: "node", extra: []string{"index.js"}},
		{dir: plain, arg0: "node", extra: []string{"/opt/crow/satellite/agent.mjs"}},
	} {
		o.uid = nobody
		s := start(t, "127.0.0.1:0", o)
		expect(t, ch, s.Addr, true, ReasonGatewayProcess)
	}

	// LO-05: one of the wall's own processes (as the session names them).
	w := start(t, "127.0.0.1:0", svcOpts{uid: nobody, dir: plain})
	expect(t, ch, w.Addr, true, "")
	wallPID.Store(int64(w.pid()))
	expect(t, ch, w.Addr, true, ReasonWallProcess)
}

func TestControllerOwnListener(t *testing.T) {
	needRoot(t)
	c := newCrow(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := netip.MustParseAddrPort(l.Addr().String())
	root := c.checker(t, func(cfg *Config) { cfg.UID = uidp(0) })
	expect(t, root, addr, true, ReasonWallProcess)

	// A root controller still judges another root service: it passes the
	// process rules and then must be a container port, whether or not
	// some root process's descriptors are out of root's reach here.
	plain := openDir(t, "svc")
	s := start(t, "127.0.0.1:0", svcOpts{uid: 0, dir: plain})
	expect(t, root, s.Addr, true, ReasonNotAContainerPort)
	// Positive control: the same service is a same-user service for a
	// nobody controller once it runs as nobody.
	n := start(t, "127.0.0.1:0", svcOpts{uid: nobody, dir: plain})
	expect(t, c.checker(t, nil), n.Addr, true, "")
}

func TestOwners(t *testing.T) {
	needRoot(t)
	c := newCrow(t)
	plain := openDir(t, "svc")
	ch := c.checker(t, nil)

	// LO-01: nothing listens.
	free := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t))
	expect(t, ch, free, true, ReasonNoListener)
	s := start(t, free.String(), svcOpts{uid: nobody, dir: plain})
	expect(t, ch, s.Addr, true, "")

	// LO-13: another user (a reverse proxy's account).
	o := start(t, "127.0.0.1:0", svcOpts{uid: 4242, dir: plain})
	expect(t, ch, o.Addr, true, ReasonOtherUser)

	// LO-10: a root daemon no container publishes (no engine configured,
	// and with a real engine in TestDocker*).
	r := start(t, "127.0.0.1:0", svcOpts{uid: 0, dir: plain})
	expect(t, ch, r.Addr, true, ReasonNotAContainerPort)

	// LO-04: a socket of this user that no process of this user holds
	// (its creator became another user; the fd could as well have been
	// passed on). Positive control: the same dance ending as nobody.
	h := start(t, "127.0.0.1:0", svcOpts{uid: 0, dir: plain, flags: []string{"-sockuid", "65534", "-uid", "4242"}})
	expect(t, ch, h.Addr, true, ReasonOrphanSocket)
	k := start(t, "127.0.0.1:0", svcOpts{uid: 0, dir: plain, flags: []string{"-sockuid", "65534", "-uid", "65534"}})
	expect(t, ch, k.Addr, true, "")
}

func TestSeveralListeners(t *testing.T) {
	needRoot(t)
	c := newCrow(t)
	plain := openDir(t, "svc")
	ch := c.checker(t, nil)
	reuse := []string{"-reuseport"}

	// Positive control: two benign services sharing a port.
	a := start(t, "127.0.0.1:0", svcOpts{uid: nobody, dir: plain, flags: reuse})
	start(t, a.Addr.String(), svcOpts{uid: nobody, dir: plain, flags: reuse})
	expect(t, ch, a.Addr, true, "")

	// LO-08: the add-on's service and a gateway on one port: refused.
	b := start(t, "127.0.0.1:0", svcOpts{uid: nobody, dir: plain, flags: reuse})
	start(t, b.Addr.String(), svcOpts{uid: nobody, dir: c.checkout, flags: reuse, arg0: "node", extra: []string{"servers/gateway/index.js"}})
	expect(t, ch, b.Addr, true, ReasonGatewayProcess)
}

func TestIPv6Listeners(t *testing.T) {
	needRoot(t)
	if l, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("skipping: no IPv6 loopback here: %v", err)
	} else {
		l.Close()
	}
	c := newCrow(t)
	plain := openDir(t, "svc")
	ch := c.checker(t, nil)
	v4 := func(p uint16) netip.AddrPort { return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), p) }
	v6 := func(p uint16) netip.AddrPort { return netip.AddrPortFrom(netip.IPv6Loopback(), p) }

	// [::1] is an IPv6 listener only.
	one := start(t, "[::1]:0", svcOpts{uid: nobody, dir: plain})
	expect(t, ch, v6(one.Addr.Port()), true, "")
	expect(t, ch, v4(one.Addr.Port()), true, ReasonNoListener)
	bad := start(t, "[::1]:0", svcOpts{uid: nobody, dir: c.checkout})
	expect(t, ch, v6(bad.Addr.Port()), true, ReasonUnderCrowTree)

	// A [::] listener shows only in tcp6 and answers 127.0.0.1 too.
	any := start(t, "[::]:0", svcOpts{uid: nobody, dir: plain})
	expect(t, ch, v4(any.Addr.Port()), true, "")
	expect(t, ch, v6(any.Addr.Port()), true, "")
	anyBad := start(t, "[::]:0", svcOpts{uid: nobody, dir: c.checkout})
	expect(t, ch, v4(anyBad.Addr.Port()), true, ReasonUnderCrowTree)
	expect(t, ch, v6(anyBad.Addr.Port()), false, ReasonUnderCrowTree)

	// 0.0.0.0 answers 127.0.0.1, never ::1.
	zero := start(t, "0.0.0.0:0", svcOpts{uid: nobody, dir: c.home})
	expect(t, ch, v4(zero.Addr.Port()), true, ReasonUnderCrowTree)
}

// LO-14: a port that changes hands inside the cache window is judged
// again at once, because the answer is tied to the socket's inode.
func TestPortChangesHands(t *testing.T) {
	needRoot(t)
	c := newCrow(t)
	plain := openDir(t, "svc")
	var judged atomic.Int32
	ch := c.checker(t, func(cfg *Config) {
		cfg.TTL = time.Hour
		cfg.IsCrowProcess = func(p Process) bool { judged.Add(1); return IsCrowProcess(p) }
	})

	s := start(t, "127.0.0.1:0", svcOpts{uid: nobody, dir: plain})
	expect(t, ch, s.Addr, true, "")
	expect(t, ch, s.Addr, true, "")
	if n := judged.Load(); n != 1 {
		t.Fatalf("the same socket was judged %d times inside the cache window, want 1 (the answer reused)", n)
	}
	// The manifest-default question is a different answer.
	expect(t, ch, s.Addr, false, ReasonDefaultToUserProcess)

	s.stop()
	start(t, s.Addr.String(), svcOpts{uid: nobody, dir: plain, arg0: "node", extra: []string{"servers/gateway/index.js"}})
	expect(t, ch, s.Addr, true, ReasonGatewayProcess)
}

func TestCanceledCheckIsRefusedAndNotKept(t *testing.T) {
	needRoot(t)
	c := newCrow(t)
	ch := c.checker(t, func(cfg *Config) { cfg.TTL = time.Hour })
	s := start(t, "127.0.0.1:0", svcOpts{uid: nobody, dir: openDir(t, "svc")})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := ReasonOf(ch.Check(ctx, s.Addr, true)); r != ReasonCheckFailed {
		t.Fatalf("a canceled check = %q, want CheckFailed", r)
	}
	expect(t, ch, s.Addr, true, "")
}

func TestDockerUnreachableIsRefused(t *testing.T) {
	needRoot(t)
	c := newCrow(t)
	// A real client against a socket where no engine answers.
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	eng, err := dockerwatch.New()
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ch := c.checker(t, func(cfg *Config) { cfg.Docker = eng })
	r := start(t, "127.0.0.1:0", svcOpts{uid: 0, dir: openDir(t, "svc")})
	expect(t, ch, r.Addr, true, ReasonCheckFailed)
	n := start(t, "127.0.0.1:0", svcOpts{uid: nobody, dir: openDir(t, "svc")})
	expect(t, ch, n.Addr, true, "") // docker is only asked about root's sockets
}

func TestNewRejectsBadConfig(t *testing.T) {
	good := Config{AddonID: "a", Checkout: "/srv/crow", Home: "/home/u/.crow"}
	if _, err := New(good); err != nil {
		t.Fatalf("positive control: %v", err)
	}
	for name, mod := range map[string]func(*Config){
		"no id":             func(c *Config) { c.AddonID = "" },
		"relative checkout": func(c *Config) { c.Checkout = "crow" },
		"empty home":        func(c *Config) { c.Home = "" },
		"root as home":      func(c *Config) { c.Home = "/" },
		"root as checkout":  func(c *Config) { c.Checkout = "//" },
	} {
		cfg := good
		mod(&cfg)
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// rootBlind returns a root process whose descriptors root cannot read
// here, or 0.
func rootBlind(t testing.TB) int {
	t.Helper()
	_, blind, err := holders(context.Background(), scan{procRoot: "/proc", uid: 0, want: map[uint64]bool{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(blind) == 0 {
		return 0
	}
	return blind[0]
}

// publishedOnly stands in for an engine whose userland proxy is off
// (userland-proxy: false), which these tests cannot configure on the
// shared engine: it reports a published port that has no listener.
type publishedOnly struct{ port uint16 }

func (p publishedOnly) PublishedPorts(context.Context) ([]dockerwatch.Published, error) {
	return []dockerwatch.Published{{ContainerID: "feedfacecafe0000", Project: "alpha", HostIP: "127.0.0.1", HostPort: p.port, Protocol: "tcp"}}, nil
}

// LO-15: a port Docker forwards by NAT only has no listener to judge; it
// is refused with its own reason (and an unpublished free port is plain
// NoListener beside it).
func TestPublishedWithoutListener(t *testing.T) {
	c := newCrow(t)
	port := freePort(t)
	ch := c.checker(t, func(cfg *Config) { cfg.Docker = publishedOnly{port} })
	expect(t, ch, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port), true, ReasonPublishedWithoutListener)
	other := freePort(t)
	for other == port {
		other = freePort(t)
	}
	expect(t, ch, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), other), true, ReasonNoListener)
}

// Many connections at once share one walk and all get the same answer.
func TestConcurrentChecks(t *testing.T) {
	needRoot(t)
	c := newCrow(t)
	plain := openDir(t, "svc")
	ch := c.checker(t, func(cfg *Config) { cfg.TTL = 50 * time.Millisecond })
	ok := start(t, "127.0.0.1:0", svcOpts{uid: nobody, dir: plain})
	bad := start(t, "127.0.0.1:0", svcOpts{uid: nobody, dir: c.checkout})
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 32 {
		wg.Go(func() {
			for range 10 {
				if r := ReasonOf(ch.Check(context.Background(), ok.Addr, true)); r != "" {
					errs <- fmt.Sprintf("goroutine %d: the allowed service got %s", i, r)
				}
				if r := ReasonOf(ch.Check(context.Background(), bad.Addr, true)); r != ReasonUnderCrowTree {
					errs <- fmt.Sprintf("goroutine %d: the checkout service got %q", i, r)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// The check plugs into the relay as is.
var _ egress.ListenerCheck = (*Checker)(nil).Check

// A root controller's root sockets when the container rules pass. The
// engine is a stand-in (publishedOnly) because a real container's
// docker-proxy cannot share its port with the services these cases need:
// one held by no root process, one started under Crow's checkout. Each
// refusal sits beside a root service that passes on the same path; the
// real docker-proxy is judged in TestDockerContainers.
func TestRootControllerHolders(t *testing.T) {
	needRoot(t)
	c := newCrow(t)
	plain := openDir(t, "svc")
	rootCh := func(port uint16) *Checker {
		return c.checker(t, func(cfg *Config) { cfg.UID = uidp(0); cfg.Docker = publishedOnly{port} })
	}
	blind := rootBlind(t)
	if blind != 0 {
		t.Logf("pid %d's descriptors cannot be read by root here: the passes below tolerate it", blind)
	}

	// Positive control: a root service on a port the add-on's project
	// publishes, held by a root process that can be read.
	ok := start(t, "127.0.0.1:0", svcOpts{uid: 0, dir: plain})
	expect(t, rootCh(ok.Addr.Port()), ok.Addr, true, "")
	expect(t, rootCh(ok.Addr.Port()), ok.Addr, false, "")
	// The container rules still decide: the same service when the
	// project publishes another port.
	expect(t, rootCh(freePort(t)), ok.Addr, true, ReasonNotAContainerPort)

	// Every seen holder passes the process rules.
	tree := start(t, "127.0.0.1:0", svcOpts{uid: 0, dir: c.checkout})
	expect(t, rootCh(tree.Addr.Port()), tree.Addr, true, ReasonUnderCrowTree)
	gw := start(t, "127.0.0.1:0", svcOpts{uid: 0, dir: plain, arg0: "node", extra: []string{"servers/gateway/index.js"}})
	expect(t, rootCh(gw.Addr.Port()), gw.Addr, true, ReasonGatewayProcess)

	// A root socket no root process holds (its creator became uid 4242):
	// with a blind root process, that one might hold it, so the check
	// cannot judge the holder; without one, it is an orphan.
	orphan := start(t, "127.0.0.1:0", svcOpts{uid: 0, dir: plain, flags: []string{"-sockuid", "0", "-uid", "4242"}})
	want := ReasonOrphanSocket
	if blind != 0 {
		want = ReasonCheckFailed
	}
	expect(t, rootCh(orphan.Addr.Port()), orphan.Addr, true, want)

	// A non-root controller keeps judging root's sockets by the
	// container rules alone.
	expect(t, c.checker(t, func(cfg *Config) { cfg.Docker = publishedOnly{ok.Addr.Port()} }), ok.Addr, true, "")
	expect(t, c.checker(t, func(cfg *Config) { cfg.Docker = publishedOnly{tree.Addr.Port()} }), tree.Addr, true, "")
}
