package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/addonwall/addonwall/internal/e2eenv"
	"github.com/addonwall/addonwall/internal/runner"
	wallsession "github.com/addonwall/addonwall/internal/session"
	"github.com/addonwall/addonwall/test/probe/report"
)

// The wall tests drive add-ons the way an MCP client does: a real
// `addonwall connect ID` subprocess whose stdin and stdout are the client's
// pipes, talking to the controller that the harness runs in this process.
// The binaries are built once per test run, on first use, into binDir.

var (
	binDir   string
	binOnce  = map[string]*sync.Once{"addonwall": {}, "probe": {}, "pongd": {}}
	binErr   = map[string]error{}
	binPaths = map[string]string{}
	binMu    sync.Mutex
)

func TestMain(m *testing.M) {
	// Not under /tmp: the addonwall binary is also the walls' entry, and a
	// wall binds nothing from /tmp, where anyone can write.
	base := filepath.Join(repoRoot(), ".cache", "e2e-bin")
	if err := os.MkdirAll(base, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "making the folder for test binaries:", err)
		os.Exit(2)
	}
	dir, err := os.MkdirTemp(base, "b")
	if err != nil {
		fmt.Fprintln(os.Stderr, "making the folder for test binaries:", err)
		os.Exit(2)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// built builds one of the repository's programs as the Makefile does
// (CGO_ENABLED=0, -trimpath: static, so it runs in a wall with nothing but
// the system folders bound) and returns its path: "addonwall" is the binary
// an MCP client's config names and the walls' entry, "probe" test/probe,
// "pongd" the network tests' service.
func built(t *testing.T, name string) string {
	t.Helper()
	binMu.Lock()
	once := binOnce[name]
	binMu.Unlock()
	if once == nil {
		t.Fatalf("no program %q to build", name)
	}
	once.Do(func() {
		pkg := map[string]string{"addonwall": ".", "probe": "./test/probe", "pongd": "./test/e2e/testdata/pongd"}[name]
		out := filepath.Join(binDir, name)
		cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
		cmd.Dir = e2eenv.RepoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		b, err := cmd.CombinedOutput()
		binMu.Lock()
		defer binMu.Unlock()
		if err != nil {
			binErr[name] = fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
			return
		}
		binPaths[name] = out
	})
	binMu.Lock()
	defer binMu.Unlock()
	if err := binErr[name]; err != nil {
		t.Fatal(err)
	}
	return binPaths[name]
}

// globalFlags point a CLI command at this home.
func (h *home) globalFlags() []string {
	return []string{"--crow-home", h.paths.CrowHome, "--data-dir", h.paths.DataDir, "--store", h.paths.Store, "-n", testNS}
}

// connectCmd is `addonwall connect ID` for this home, as an MCP client's
// config would name it. Its stderr (the add-on's, too) goes to stderr.
func (h *home) connectCmd(id string, stderr io.Writer) *exec.Cmd {
	h.t.Helper()
	cmd := exec.Command(built(h.t, "addonwall"), append([]string{"connect", id}, h.globalFlags()...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + h.root}
	cmd.Stderr = stderr
	return cmd
}

// session is one MCP client session through `addonwall connect`.
type session struct {
	*mcp.ClientSession
	stderr *lockedBuffer
}

// lockedBuffer is stderr shared between the connect process's copier and
// the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// mcpConnect initializes an MCP session with the add-on through a real
// connect subprocess. The session is closed when the test ends.
func (h *home) mcpConnect(ctx context.Context, id string) (*session, error) {
	h.t.Helper()
	stderr := &lockedBuffer{}
	client := mcp.NewClient(&mcp.Implementation{Name: "addonwall-e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: h.connectCmd(id, stderr)}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to add-on %s: %w; connect's stderr: %s", id, err, stderr.String())
	}
	h.t.Cleanup(func() { cs.Close() })
	return &session{ClientSession: cs, stderr: stderr}, nil
}

// callText calls a tool and returns its text content and whether the tool
// answered with an error.
func (s *session) callText(ctx context.Context, tool string, args map[string]any) (string, bool, error) {
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", false, fmt.Errorf("calling %s: %w; stderr: %s", tool, err, s.stderr.String())
	}
	var sb strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(t.Text)
		}
	}
	return sb.String(), res.IsError, nil
}

// probeReport calls the probe add-on's one tool and parses its report.
func (s *session) probeReport(ctx context.Context, in map[string]any) (*report.Report, error) {
	text, isErr, err := s.callText(ctx, "probe", in)
	if err != nil {
		return nil, err
	}
	if isErr {
		return nil, fmt.Errorf("the probe tool answered with an error: %s", text)
	}
	return report.Parse([]byte(text))
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// installProbe installs the probe program as add-on id (a bundle folder
// holding it and a manifest) and returns its mcp-addons.json entry: the
// command is ./probe, pinned with command_sha256 as Crow requires of a
// relative command.
func (h *home) installProbe(id string, manifest map[string]any, args ...string) map[string]any {
	h.t.Helper()
	h.addon(id, manifest)
	dst := filepath.Join(h.paths.InstallDir(id), "probe")
	copyFile(h.t, built(h.t, "probe"), dst, 0o755)
	if len(args) == 0 {
		args = []string{"mcp"}
	}
	return map[string]any{"command": "./probe", "args": args, "command_sha256": sha256File(h.t, dst)}
}

// installNodeServer installs one of the real MCP servers from npm as add-on
// id: test/npm/node_modules is copied into the bundle's own node_modules, as
// an installed bundle carries its dependencies (not hard-linked: a file with
// names outside the wall is masked, since one of them may be a .env), and
// the entry runs node on the package's dist/index.js, relative to the
// install folder (the wall's working folder).
func (h *home) installNodeServer(id, pkg string, manifest map[string]any, args ...string) map[string]any {
	h.t.Helper()
	return h.installNode(id, pkg, manifest, "-a", args...)
}

// installNode copies node_modules with `cp <how>`: "-a" copies, "-al"
// hard-links every file, as pnpm's store does.
func (h *home) installNode(id, pkg string, manifest map[string]any, how string, args ...string) map[string]any {
	h.t.Helper()
	e2eenv.Node(h.t)
	src := e2eenv.NodeModules(h.t)
	h.addon(id, manifest)
	dst := filepath.Join(h.paths.InstallDir(id), "node_modules")
	if out, err := exec.Command("cp", how, src, dst).CombinedOutput(); err != nil {
		h.t.Fatalf("copying %s into the bundle: %v %s", src, err, out)
	}
	entry := filepath.Join("node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(filepath.Join(h.paths.InstallDir(id), entry)); err != nil {
		h.t.Fatalf("the npm package %s has no %s: %v", pkg, entry, err)
	}
	return map[string]any{"command": "node", "args": append([]string{entry}, args...)}
}

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
}

func mkfile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// walledEnv is the controller environment that walls every add-on.
func walledEnv(extra map[string]string) map[string]string {
	env := map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// ctxFor is a context that ends with the test or after d.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// repoRoot is the repository's top folder, for TestMain (which has no t).
func repoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "."
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// runWalls starts the controller as h.run does, with the built addonwall
// binary as the walls' entry: the test binary itself lives under /tmp,
// which a wall never binds.
func (h *home) runWalls(env map[string]string, tweak func(*runner.Options)) {
	h.t.Helper()
	entry := built(h.t, "addonwall")
	h.run(env, func(o *runner.Options) {
		o.WallPreparer = func(p *wallsession.WallPreparer) { p.EntryBinary = entry }
		if tweak != nil {
			tweak(o)
		}
	})
}

// endSession closes the client's side, as an MCP client does when it is
// done, and waits for the controller to record the end. A session the
// client ended is a normal end: the add-on must still read want.
func (h *home) endSession(s *session, id, want string) {
	h.t.Helper()
	if err := s.Close(); err != nil {
		h.t.Logf("closing the MCP session of %s: %v", id, err)
	}
	var last string
	eventually(h.t, 20*time.Second, "the session of "+id+" ends", func() (bool, string) {
		w, err := h.wall(id)
		if err != nil {
			return false, err.Error()
		}
		last = w.Status.Sessions.LastExitReason
		return w.Status.Sessions.Active == 0 && w.Status.Sessions.LastExit != nil, fmt.Sprintf("active %d, last exit %q", w.Status.Sessions.Active, last)
	})
	h.t.Logf("the session of %s ended: %s", id, last)
	w := h.waitWord(id, want, 10*time.Second)
	if w.Status.Failure != nil {
		h.t.Errorf("a session the client ended left a card on %s: %+v (last exit: %s)", id, w.Status.Failure, last)
	}
}

// probeOnce runs one MCP session with the probe add-on id, calls its tool
// with in, ends the session and expects the add-on to read want after it.
func (h *home) probeOnce(id, want string, in map[string]any, within time.Duration) (*report.Report, error) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	s, err := h.mcpConnect(ctx, id)
	if err != nil {
		return nil, err
	}
	r, err := s.probeReport(ctx, in)
	h.endSession(s, id, want)
	return r, err
}

// probeControl is probeOnce for an unwalled control. Unwalled, the probe
// reads every process of the host and makes its attempts as root outside
// any wall, so a host busy with other work can stall it (once, in a full
// run, for minutes); one retry keeps that from failing a test about walls.
func (h *home) probeControl(id, want string, in map[string]any) *report.Report {
	h.t.Helper()
	r, err := h.probeOnce(id, want, in, 90*time.Second)
	if err != nil {
		h.t.Logf("the unwalled control %s did not answer (%v); trying once more", id, err)
		r, err = h.probeOnce(id, want, in, 90*time.Second)
	}
	if err != nil {
		h.t.Fatalf("the unwalled control %s: %v", id, err)
	}
	return r
}
