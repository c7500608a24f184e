package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/addonwall/addonwall/internal/e2eenv"
	"github.com/addonwall/addonwall/internal/latency"
	"github.com/addonwall/addonwall/internal/paths"
)

// srtSettings is the peer's config: no network, the usual credential
// folders unreadable, writes only to /tmp — about what a wall hands.
const srtSettings = `{"network":{"allowedDomains":[],"deniedDomains":[]},
 "filesystem":{"denyRead":["~/.ssh","~/.aws","~/.gnupg"],"allowWrite":["/tmp"],"denyWrite":[]}}`

// initialize runs one MCP session to its initialize answer and closes it.
func initialize(ctx context.Context, cmd *exec.Cmd) (time.Duration, error) {
	start := time.Now()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	d := time.Since(start)
	if err != nil {
		return d, err
	}
	// Close's error is not part of the measure: a server that lingers after
	// its stdin closed is ended by the SDK's SIGTERM to the connect
	// command, whose connection then ends the child.
	_ = cs.Close()
	return d, nil
}

// BenchmarkConnectInitialize measures connect → MCP initialize answer for
// a small Go MCP server (the probe) and for server-everything from npm,
// walled and unwalled through `addonwall connect`, run directly, and under
// @anthropic-ai/sandbox-runtime (srt) as the peer, interleaved in one run
// so the machine's noise falls on all of them alike.
func BenchmarkConnectInitialize(b *testing.B) {
	e2eenv.Bwrap(b)
	modules := e2eenv.NodeModules(b)
	srt := filepath.Join(modules, ".bin", "srt")
	p := benchHome(b)
	node, err := exec.LookPath("node")
	e2eenv.Need(b, err == nil, "node is not installed")

	everything := func(id string) map[string]any {
		dst := filepath.Join(p.InstallDir(id), "node_modules")
		if err := os.MkdirAll(dst, 0o755); err != nil {
			b.Fatal(err)
		}
		// The contents, so a symlinked node_modules is copied, not linked.
		if out, err := exec.Command("cp", "-a", modules+"/.", dst).CombinedOutput(); err != nil {
			b.Fatalf("copying node_modules: %v %s", err, out)
		}
		writeJSON(b, filepath.Join(p.InstallDir(id), "manifest.json"), map[string]any{"id": id, "name": id})
		return map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-everything/dist/index.js"}}
	}
	addons := map[string]any{
		"probe-w": installProbe(b, p, "probe-w"), "probe-o": installProbe(b, p, "probe-o"),
		"every-w": everything("every-w"), "every-o": everything("every-o"),
	}
	writeJSON(b, p.AddonsFile(), addons)
	choice := map[string]any{"choice": "notWalled", "changedAt": "2026-11-29T00:00:00Z"}
	writeJSON(b, p.WallsFile(), map[string]any{"version": 1, "addons": map[string]any{"probe-o": choice, "every-o": choice}})
	settings := filepath.Join(filepath.Dir(p.CrowHome), "srt.json")
	if err := os.WriteFile(settings, []byte(srtSettings), 0o600); err != nil {
		b.Fatal(err)
	}
	runController(b, p, map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"})
	waitAll(b, p, map[string]string{"probe-w": "walled", "probe-o": "not walled (your choice)", "every-w": "walled", "every-o": "not walled (your choice)"}, 60*time.Second)

	connect := func(id string) func() *exec.Cmd {
		return func() *exec.Cmd {
			return exec.Command(bins.addonwall, "connect", id, "--crow-home", p.CrowHome, "--data-dir", p.DataDir, "-n", ns)
		}
	}
	everythingJS := filepath.Join(p.InstallDir("every-o"), "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	_, srtErr := exec.LookPath("rg")
	_, socatErr := exec.LookPath("socat")
	haveSrt := srtErr == nil && socatErr == nil
	if !haveSrt {
		b.Log("srt needs ripgrep and socat (apt-get install ripgrep socat); the peer column is left out")
	}
	type variant struct {
		name string
		cmd  func() *exec.Cmd
	}
	servers := []struct {
		name     string
		variants []variant
	}{
		{"probe", []variant{
			{"walled", connect("probe-w")},
			{"unwalled", connect("probe-o")},
			{"direct", func() *exec.Cmd { return exec.Command(bins.probe, "mcp") }},
			{"srt", func() *exec.Cmd { return exec.Command(srt, "-s", settings, bins.probe, "mcp") }},
		}},
		{"everything", []variant{
			{"walled", connect("every-w")},
			{"unwalled", connect("every-o")},
			{"direct", func() *exec.Cmd { return exec.Command(node, everythingJS) }},
			{"srt", func() *exec.Cmd { return exec.Command(srt, "-s", settings, node, everythingJS) }},
		}},
	}
	for _, s := range servers {
		b.Run(s.name, func(b *testing.B) {
			ctx := context.Background()
			times := map[string]latency.Samples{}
			for i := 0; i < b.N; i++ {
				for _, v := range s.variants {
					if v.name == "srt" && !haveSrt {
						continue
					}
					cmd := v.cmd()
					var stderr strings.Builder
					cmd.Stderr = &stderr
					d, err := initialize(ctx, cmd)
					if err != nil {
						b.Fatalf("%s %s: %v\n%s", s.name, v.name, err, stderr.String())
					}
					times[v.name] = append(times[v.name], d)
				}
			}
			w, u, d := latency.Ms(times["walled"].P50()), latency.Ms(times["unwalled"].P50()), latency.Ms(times["direct"].P50())
			b.ReportMetric(w, "walled-p50-ms")
			b.ReportMetric(u, "unwalled-p50-ms")
			b.ReportMetric(d, "direct-p50-ms")
			b.ReportMetric(w-u, "wall-adds-ms")
			b.ReportMetric(w/u, "walled/unwalled")
			if haveSrt {
				sr := latency.Ms(times["srt"].P50())
				b.ReportMetric(sr, "srt-p50-ms")
				b.ReportMetric(sr-d, "srt-adds-ms")
				b.ReportMetric((w-u)/(sr-d), "wall-add/srt-add")
			}
		})
	}
}

var _ = paths.Paths{}
