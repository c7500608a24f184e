package listener

import (
	"archive/tar"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/addonwall/addonwall/internal/dockerwatch"
	"github.com/addonwall/addonwall/internal/e2eenv"
)

// TestDockerContainers runs real containers (an image imported from a
// tar holding the static test service; nothing is pulled) that publish
// 127.0.0.1 ports under different compose project labels, and judges
// docker-proxy's root-owned listeners for them.
func TestDockerContainers(t *testing.T) {
	needRoot(t)
	e2eenv.Docker(t)
	c := newCrow(t)
	image := importImage(t)
	eng, err := dockerwatch.New()
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()

	kokoroDir := filepath.Join(c.checkout, "bundles", "kokoro-tts")
	labels := [][]string{
		{dockerwatch.ProjectLabel + "=alpha"},
		{dockerwatch.ProjectLabel + "=beta"},
		nil,
		{dockerwatch.ProjectLabel + "=gamma"},
		{dockerwatch.ProjectLabel + "=kokoro-tts", "com.docker.compose.project.working_dir=" + kokoroDir},
	}
	addrs := make([]netip.AddrPort, len(labels))
	errs := make([]error, len(labels))
	var wg sync.WaitGroup
	for i, l := range labels {
		wg.Go(func() { addrs[i], errs[i] = runContainer(t, image, l...) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	alpha, beta, none, gamma, kokoro := addrs[0], addrs[1], addrs[2], addrs[3], addrs[4]

	checker := func(addon string, installed ...string) *Checker {
		return c.checker(t, func(cfg *Config) {
			cfg.AddonID = addon
			cfg.Docker = eng
			cfg.Installed = map[string]bool{}
			for _, i := range installed {
				cfg.Installed[i] = true
			}
		})
	}
	alphaCh := checker("alpha", "beta")
	betaCh := checker("beta", "alpha")

	// This add-on's own project: allowed, for a manifest default too.
	expect(t, alphaCh, alpha, true, "")
	expect(t, alphaCh, alpha, false, "")
	expect(t, betaCh, beta, true, "")
	// Another add-on's project, each beside the owner's positive control.
	expect(t, alphaCh, beta, true, ReasonOtherProject)
	expect(t, betaCh, alpha, true, ReasonOtherProject)
	// No label; a project of no installed add-on.
	expect(t, alphaCh, none, true, ReasonUnlabelledContainer)
	expect(t, alphaCh, gamma, true, ReasonNotInstalled)
	expect(t, checker("alpha", "gamma"), gamma, true, ReasonOtherProject)

	// The named exception, from the checkout's own bundle folder (LO-12):
	// media may reach kokoro-tts only when this Crow has it installed.
	expect(t, checker("media", "kokoro-tts"), kokoro, true, "")
	expect(t, checker("media"), kokoro, true, ReasonNotInstalled)
	expect(t, checker("alpha", "kokoro-tts"), kokoro, true, ReasonOtherProject)

	// A published port on an address no container publishes on.
	other := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), alpha.Port())
	expect(t, alphaCh, other, true, ReasonNoListener)

	// A root controller (CI runs it so) shares its user with docker-proxy
	// and judges it by the process rules and the container rules. Where
	// some root process's descriptors cannot be read even by root (this
	// host's pid 1), the container rules decide whether that blind spot
	// is tolerated (judgeRootController), so each refusal below sits
	// beside the positive control on the same host and engine.
	if blind := rootBlind(t); blind != 0 {
		t.Logf("pid %d's descriptors cannot be read by root here: the root controller's answers below rest on the container rules", blind)
	}
	rootCh := c.checker(t, func(cfg *Config) {
		cfg.AddonID = "alpha"
		cfg.Docker = eng
		cfg.UID = uidp(0)
		cfg.Installed = map[string]bool{"beta": true}
	})
	expect(t, rootCh, alpha, true, "")
	expect(t, rootCh, alpha, false, "")
	expect(t, rootCh, beta, true, ReasonOtherProject)
	expect(t, rootCh, none, true, ReasonUnlabelledContainer)
	expect(t, rootCh, gamma, true, ReasonNotInstalled)
	rootDaemon := start(t, "127.0.0.1:0", svcOpts{uid: 0, dir: openDir(t, "svc")})
	expect(t, rootCh, rootDaemon.Addr, true, ReasonNotAContainerPort)
	expect(t, rootCh, alpha, true, "") // the positive control, once more after the refusals

	// A root daemon on a port no container publishes, with the engine
	// answering (LO-10).
	daemon := start(t, "127.0.0.1:0", svcOpts{uid: 0, dir: openDir(t, "svc")})
	expect(t, alphaCh, daemon.Addr, true, ReasonNotAContainerPort)
}

// importImage builds a one-file image from the static test service.
func importImage(t *testing.T) string {
	t.Helper()
	bin, err := os.ReadFile(tinylisten)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "tinylisten", Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(bin); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	image := "addonwall-listener-test:" + randomHex(6)
	cmd := exec.Command("docker", "import", "--change", `CMD ["/tinylisten", "0.0.0.0:8080"]`, "-", image)
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("docker", "rmi", "-f", image).CombinedOutput(); err != nil {
			t.Logf("removing image %s: %v\n%s", image, err, out)
		}
	})
	return image
}

// runContainer starts one container publishing 8080 on a free
// 127.0.0.1 port and waits until docker-proxy listens there. It may run
// on another goroutine, so it returns errors instead of failing t.
func runContainer(t *testing.T, image string, labels ...string) (netip.AddrPort, error) {
	var lastErr error
	for range 3 { // a free port can be taken between the probe and the run
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return netip.AddrPort{}, err
		}
		port := netip.MustParseAddrPort(l.Addr().String()).Port()
		l.Close()
		args := []string{"run", "-d", "-p", fmt.Sprintf("127.0.0.1:%d:8080", port)}
		for _, l := range labels {
			args = append(args, "--label", l)
		}
		args = append(args, image)
		out, err := exec.Command("docker", args...).Output()
		id := strings.TrimSpace(string(out))
		if id != "" {
			t.Cleanup(func() {
				if out, err := exec.Command("docker", "rm", "-f", id).CombinedOutput(); err != nil {
					t.Logf("removing container %s: %v\n%s", id, err, out)
				}
			})
		}
		if err != nil {
			lastErr = fmt.Errorf("docker run %v: %w", labels, err)
			continue
		}
		addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			all, err := readListeners("/proc")
			if err != nil {
				return addr, err
			}
			if m := matching(all, addr); len(m) > 0 {
				if m[0].UID != 0 {
					return addr, fmt.Errorf("the published port %s is held by uid %d, not root's docker-proxy", addr, m[0].UID)
				}
				return addr, nil
			}
		}
		return addr, fmt.Errorf("nothing listens on %s after docker run (is docker's userland proxy off? then a published port has no listener and is refused)", addr)
	}
	return netip.AddrPort{}, lastErr
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
