package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/addonwall/addonwall/internal/dockerwatch"
	"github.com/addonwall/addonwall/internal/e2eenv"
	"github.com/addonwall/addonwall/internal/runner"
	wallsession "github.com/addonwall/addonwall/internal/session"
)

// TestWalledAddonReachesOnlyItsOwnContainer is the network issue's
// acceptance test with a real Docker engine: an add-on whose compose
// project runs a container publishing 127.0.0.1:P reaches it through its
// listed address, through the whole wall (the entry's forwarder, the
// relay, the real listener-owner check, docker-proxy); the same add-on is
// refused another add-on's container, an unlabelled container, the
// gateway, a process started from the checkout and a port nobody listens
// on. Every refused listener answers a direct connection from the host
// (it is alive), and every refusal is tried through the same wall that
// reaches its own container.
func TestWalledAddonReachesOnlyItsOwnContainer(t *testing.T) {
	e2eenv.Bwrap(t)
	e2eenv.Node(t)
	e2eenv.Docker(t)
	entryBin := built(t, "addonwall")
	pongd := built(t, "pongd")
	image := importPongd(t, pongd)
	h := newHome(t)
	h.paths.Checkout = filepath.Join(h.root, "checkout")

	var (
		mu    sync.Mutex
		ports = map[string]int{}
		errs  []error
		wg    sync.WaitGroup
	)
	for _, c := range []struct{ name, project string }{{"alpha", "alpha"}, {"beta", "beta"}, {"unlabelled", ""}} {
		wg.Go(func() {
			p, err := runPongContainer(t, image, c.name, c.project)
			mu.Lock()
			defer mu.Unlock()
			ports[c.name], errs = p, append(errs, err)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Host processes: a gateway (as the listener check knows one, by its
	// name) and a service run from the checkout, both of this user.
	gwBin := filepath.Join(h.root, "bin", "crow-gateway")
	chkBin := filepath.Join(h.paths.Checkout, "tools", "pongd")
	copyFile(t, pongd, gwBin, 0o755)
	copyFile(t, pongd, chkBin, 0o755)
	ports["gateway"] = startPongd(t, gwBin, "gateway")
	ports["checkout"] = startPongd(t, chkBin, "checkout")
	ports["nobody"] = freeLoopbackPort(t)

	// Every listener but the empty port answers from the host: what the
	// wall is refused is alive.
	for name, p := range ports {
		if name == "nobody" {
			continue
		}
		if r := hostPing(p); r != "pong "+name {
			t.Fatalf("%s on 127.0.0.1:%d answers %q from the host, want pong %s", name, p, r, name)
		}
	}

	addr := func(name string) string { return "127.0.0.1:" + strconv.Itoa(ports[name]) }
	env := map[string]string{}
	var hosts []string
	for _, name := range []string{"alpha", "beta", "unlabelled", "gateway", "checkout", "nobody"} {
		key := strings.ToUpper(name) + "_ADDR"
		env[key], hosts = addr(name), append(hosts, key)
	}
	install := func(id string, env map[string]string, hosts []string) map[string]any {
		h.addon(id, map[string]any{"sandbox": map[string]any{"network": map[string]any{"internet": false, "hosts": hosts}}})
		h.write(filepath.Join("bundles", id, "netcheck.js"), netcheckJS)
		h.write(filepath.Join("bundles", id, "ca.pem"), "")
		return map[string]any{"command": "node", "args": []string{filepath.Join(h.paths.InstallDir(id), "netcheck.js")}, "env": env}
	}
	h.write("mcp-addons.json", map[string]any{
		"alpha": install("alpha", env, hosts),
		"beta":  install("beta", map[string]string{"BETA_ADDR": addr("beta")}, []string{"BETA_ADDR"}),
	})
	logs := &lockedLines{}
	h.run(map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, func(o *runner.Options) {
		// The relay tells the wall only ListenerRefused; which rule of the
		// check refused is in the controller's log, read below.
		o.Log = funcr.New(func(prefix, args string) { logs.add(prefix + " " + args) }, funcr.Options{Verbosity: 1})
		o.WallPreparer = func(p *wallsession.WallPreparer) {
			p.EntryBinary = entryBin
			env := map[string]string{}
			for k, v := range p.Environ {
				env[k] = v
			}
			env["CROW_GATEWAY_PORT"] = strconv.Itoa(ports["gateway"])
			p.Environ = env
		}
	})
	h.waitWord("alpha", "walled", 30*time.Second)
	h.waitWord("beta", "walled", 30*time.Second)

	alpha := h.netConnect("alpha")
	defer alpha.end()
	// The positive control: alpha's own project's container, through its
	// listed address, the forwarder and the relay.
	if a := alpha.ask("direct " + addr("alpha")); a.Reply != "pong alpha" {
		t.Fatalf("alpha reaching its own container at %s = %+v, want pong alpha; log:\n%s", addr("alpha"), a, logs)
	}
	// And through the proxy: the relay says 200.
	if a := alpha.ask("connect " + addr("alpha")); a.Status != "HTTP/1.1 200 Connection established" {
		t.Fatalf("alpha CONNECT to its own container = %+v, want 200", a)
	}

	// As root, a root-owned socket must also be a container port of this
	// add-on's project, so a host process of root's is refused on that
	// count too; which rule speaks first is the check's choice.
	root := os.Geteuid() == 0
	why := map[string][]string{
		"beta":       {"OtherProject"},
		"unlabelled": {"UnlabelledContainer"},
		"gateway":    {"GatewayProcess"},
		"checkout":   {"UnderCrowTree"},
	}
	if root {
		why["gateway"] = append(why["gateway"], "NotAContainerPort")
		why["checkout"] = append(why["checkout"], "NotAContainerPort")
	}
	for _, name := range []string{"beta", "unlabelled", "gateway", "checkout", "nobody"} {
		t.Run("refused: "+name, func(t *testing.T) {
			wantStatus, wantReason := "HTTP/1.1 403", "ListenerRefused"
			if name == "nobody" {
				// Nothing answers the dial, so there is no listener to judge.
				wantStatus, wantReason = "HTTP/1.1 502", "DialFailed"
			}
			a := alpha.ask("connect " + addr(name))
			if !strings.HasPrefix(a.Status, wantStatus) || !strings.Contains(a.Body, addr(name)) || !strings.Contains(a.Body, wantReason) {
				t.Errorf("alpha CONNECT %s (%s) = %+v, want %s naming it and %s", addr(name), name, a, wantStatus, wantReason)
			}
			// Through the listed port's forwarder: nothing comes back.
			if a := alpha.ask("direct " + addr(name)); strings.HasPrefix(a.Reply, "pong") {
				t.Errorf("alpha reached %s through its forwarder: %+v", name, a)
			}
			if len(why[name]) == 0 {
				return
			}
			eventually(t, 10*time.Second, "the controller logs which rule refused "+name, func() (bool, string) {
				for _, line := range strings.Split(logs.String(), "\n") {
					if !strings.Contains(line, `"target"="`+addr(name)+`"`) {
						continue
					}
					for _, r := range why[name] {
						if strings.Contains(line, "("+r+")") {
							return true, line
						}
					}
					return false, line
				}
				return false, "no refusal logged for " + addr(name)
			})
		})
	}

	// The other project's container is refused to alpha, yet its own
	// add-on reaches it through the same kind of wall.
	beta := h.netConnect("beta")
	if a := beta.ask("direct " + addr("beta")); a.Reply != "pong beta" {
		t.Errorf("beta reaching its own container = %+v, want pong beta", a)
	}
	beta.end()
}

// importPongd makes a one-file image of pongd (nothing is pulled).
func importPongd(t *testing.T, bin string) string {
	t.Helper()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "pongd", Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	image := "addonwall-e2e-pongd:" + hex.EncodeToString(b)
	cmd := exec.Command("docker", "import", "-", image)
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker import: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("docker", "rmi", "-f", image).Run() })
	return image
}

// runPongContainer runs pongd in a container publishing 127.0.0.1:P, with
// a compose project label when project is not empty, and waits until it
// answers from the host. It returns errors rather than failing t: it runs
// on its own goroutine.
func runPongContainer(t *testing.T, image, name, project string) (int, error) {
	var last error
	for range 3 { // a free port can be taken between the probe and the run
		port := freeLoopbackPort(t)
		args := []string{"run", "-d", "-p", fmt.Sprintf("127.0.0.1:%d:8080", port)}
		if project != "" {
			args = append(args, "--label", dockerwatch.ProjectLabel+"="+project)
		}
		args = append(args, image, "/pongd", "0.0.0.0:8080", name)
		out, err := exec.Command("docker", args...).Output()
		if id := strings.TrimSpace(string(out)); id != "" {
			t.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", id).Run() })
		}
		if err != nil {
			last = fmt.Errorf("docker run for %s: %w", name, err)
			continue
		}
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if hostPing(port) == "pong "+name {
				return port, nil
			}
		}
		return 0, fmt.Errorf("the %s container does not answer on 127.0.0.1:%d (is docker's userland proxy off?)", name, port)
	}
	return 0, last
}

// startPongd runs pongd from bin on a free loopback port until the test
// ends.
func startPongd(t *testing.T, bin, name string) int {
	t.Helper()
	cmd := exec.Command(bin, "127.0.0.1:0", name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("%s did not start: %v", bin, err)
	}
	_, a, _ := strings.Cut(strings.TrimSpace(line), "LISTEN ")
	_, p, _ := net.SplitHostPort(a)
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%s printed %q", bin, line)
	}
	return port
}

// hostPing sends one line to 127.0.0.1:port and returns the answer line.
func hostPing(port int) string {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 2*time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintln(c, "ping")
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
