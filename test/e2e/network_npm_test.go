package e2e

import (
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/addonwall/addonwall/internal/e2eenv"
	"github.com/addonwall/addonwall/internal/runner"
	wallsession "github.com/addonwall/addonwall/internal/session"
)

// remoteResolver answers mcp.example.com with a real public address and
// nothing else.
type remoteResolver struct{}

func (remoteResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if host == "mcp.example.com" {
		return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// TestNpmServerNetwork walls a real MCP server from npm that goes out to
// the network: mcp-remote, which speaks MCP on stdio and carries it to a
// remote MCP server over HTTPS through HTTPS_PROXY (--enable-proxy). The
// remote is a Go SDK MCP server behind TLS on loopback; the relay's
// resolver and dialer are the test's (DESIGN §12), so the policy judges
// the public address mcp.example.com resolves to and no traffic leaves the
// machine. With the internet the MCP client, through `addonwall connect`,
// sees the remote's tool; with network none the same add-on reaches
// nothing and the refusal is counted.
func TestNpmServerNetwork(t *testing.T) {
	e2eenv.Bwrap(t)
	e2eenv.Node(t)
	entryBin := built(t, "addonwall")
	h := newHome(t)

	remote := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "remote_hello", Description: "says where it runs"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello from the remote"}}}, struct{}{}, nil
		})
	srv := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote },
		// It listens on loopback only because the test's dialer maps the
		// public address there; it stands for a public server.
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))

	src := e2eenv.NodeModules(t)
	install := func(id, network string) map[string]any {
		h.addon(id, map[string]any{"sandbox": map[string]any{"network": network}})
		dir := h.paths.InstallDir(id)
		if out, err := exec.Command("cp", "-a", src, filepath.Join(dir, "node_modules")).CombinedOutput(); err != nil {
			t.Fatalf("copying node_modules: %v %s", err, out)
		}
		h.write(filepath.Join("bundles", id, "ca.pem"), ca)
		return map[string]any{
			"command": "node",
			"args":    []string{"node_modules/mcp-remote/dist/proxy.js", "https://mcp.example.com/mcp", "--enable-proxy", "--transport", "http-only"},
			"env":     map[string]string{"NODE_EXTRA_CA_CERTS": filepath.Join(dir, "ca.pem")},
		}
	}
	h.write("mcp-addons.json", map[string]any{
		"remote-online":  install("remote-online", "internet"),
		"remote-offline": install("remote-offline", "none"),
	})
	h.run(map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, func(o *runner.Options) {
		o.WallPreparer = func(p *wallsession.WallPreparer) {
			p.EntryBinary = entryBin
			p.TestOnlyEgress = &wallsession.TestOnlyEgress{
				Resolver: remoteResolver{},
				Dialer:   netLoopDialer{routes: map[string]string{"93.184.215.14:443": srv.Listener.Addr().String()}},
			}
		}
	})
	h.waitWord("remote-online", "walled", 30*time.Second)
	h.waitWord("remote-offline", "walled", 30*time.Second)

	// Positive control: with the internet, the CONNECT to the public name
	// completes and the remote's tool answers through the wall.
	ctx := ctxFor(t, 90*time.Second)
	s, err := h.mcpConnect(ctx, "remote-online")
	if err != nil {
		t.Fatal(err)
	}
	text, isErr, err := s.callText(ctx, "remote_hello", nil)
	if err != nil || isErr || text != "hello from the remote" {
		t.Fatalf("remote_hello through mcp-remote in its wall = %q (error result %v, %v); stderr: %s", text, isErr, err, s.stderr.String())
	}
	_ = s.Close()

	// Network none: the same server reaches nothing. mcp-remote fails to
	// connect to its remote, so the MCP session never gets the tool.
	octx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if s, err := h.mcpConnect(octx, "remote-offline"); err == nil {
		if text, _, err := s.callText(octx, "remote_hello", nil); err == nil && text == "hello from the remote" {
			t.Fatal("remote-offline reached the remote with network none")
		}
		_ = s.Close()
	}
	eventually(t, 30*time.Second, "remote-offline's status counts the refused CONNECT to mcp.example.com:443", func() (bool, string) {
		w, err := h.wall("remote-offline")
		if err != nil {
			return false, err.Error()
		}
		e := w.Status.Egress
		return e.Refusals["NetworkNone"] >= 1 && strings.Contains(strings.Join(e.Latest, "\n"), "mcp.example.com:443 NetworkNone"), fmt.Sprintf("%+v", e)
	})
	if w, err := h.wall("remote-online"); err != nil || w.Status.Egress.Refusals["NetworkNone"] != 0 {
		t.Errorf("remote-online's refusals: %v (%v), want none", w.Status.Egress.Refusals, err)
	}
}
