package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/addonwall/addonwall/internal/e2eenv"
	"github.com/addonwall/addonwall/internal/runner"
	wallsession "github.com/addonwall/addonwall/internal/session"
)

// doorcheckJS is an add-on that asks the gateway through its door. One
// operation a line on stdin, one JSON line on stdout:
//
//	door METHOD TARGET TOKEN  a raw request to 127.0.0.1:$CROW_GATEWAY_PORT;
//	                          TOKEN is "file" (the wall's token file),
//	                          "none", or the token text itself
//	token                     the token file's text
//	tokenfile                 the token file's mode, what writing to it
//	                          does, and CROW_ADDON_DOOR_TOKEN_FILE
const doorcheckJS = `'use strict';
const net = require('net'), fs = require('fs'), readline = require('readline');
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const tokenFile = process.env.CROW_ADDON_DOOR_TOKEN_FILE || '';
function readToken() { try { return fs.readFileSync(tokenFile, 'utf8'); } catch (e) { return ''; } }
function door(method, target, tok) {
  if (tok === 'file') tok = readToken();
  if (tok === 'none') tok = '';
  return new Promise((resolve) => {
    let done = false, got = '';
    const s = net.connect(Number(process.env.CROW_GATEWAY_PORT || 3001), '127.0.0.1');
    const finish = (o) => { if (done) return; done = true; s.destroy(); resolve(Object.assign({op: 'door', target}, o)); };
    s.setTimeout(15000, () => finish({error: 'timeout'}));
    s.on('error', (e) => finish({error: e.code || String(e)}));
    s.on('connect', () => s.write(method + ' ' + target + ' HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n' +
      (tok ? 'Crow-Door-Token: ' + tok + '\r\n' : '') + '\r\n'));
    s.on('data', (d) => { got += d; });
    s.on('end', () => {
      const i = got.indexOf('\r\n\r\n');
      finish({status: got.slice(0, got.indexOf('\r\n')), body: i < 0 ? '' : got.slice(i + 4)});
    });
  });
}
function tokenfile() {
  const r = {env: tokenFile};
  try { r.mode = (fs.statSync(tokenFile).mode & 0o7777).toString(8); } catch (e) { r.mode = e.code; }
  try { fs.writeFileSync(tokenFile, 'x'); r.write = 'ok'; } catch (e) { r.write = e.code; }
  return {op: 'tokenfile', reply: JSON.stringify(r)};
}
let chain = Promise.resolve();
readline.createInterface({input: process.stdin}).on('line', (line) => {
  chain = chain.then(async () => {
    const [op, a, b, c] = line.trim().split(/\s+/);
    if (op === 'door') out(await door(a, b, c));
    else if (op === 'token') out({op, reply: readToken()});
    else if (op === 'tokenfile') out(tokenfile());
    else out({error: 'unknown op ' + op});
  });
}).on('close', () => { chain.then(() => process.exit(0)); });
`

// gatewayStub stands in for Crow's gateway on its loopback port: it
// records every request that reaches it.
type gatewayStub struct {
	mu   sync.Mutex
	seen []string // "METHOD URI token=<bool>"
}

func (g *gatewayStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.seen = append(g.seen, fmt.Sprintf("%s %s token=%v", r.Method, r.RequestURI, r.Header.Get("Crow-Door-Token") != ""))
	g.mu.Unlock()
	fmt.Fprintf(w, "gateway: %s %s", r.Method, r.RequestURI)
}

func (g *gatewayStub) requests() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.seen...)
}

// TestDoors runs first-party add-ons with door sets under the real
// controller and bubblewrap, with a stub gateway on the port
// CROW_GATEWAY_PORT names (SECURITY-CASES DOOR-01, 03, 06, 08, 09).
func TestDoors(t *testing.T) {
	e2eenv.Bwrap(t)
	e2eenv.Node(t)
	entryBin := built(t, "addonwall")
	h := newHome(t)
	gw := &gatewayStub{}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	gwPort := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)

	// The checkout's generated profiles say which add-ons are Crow's own.
	h.paths.Checkout = filepath.Join(h.root, "checkout")
	profiles := map[string]any{}
	install := func(id, doorsValue string, firstParty bool) map[string]any {
		h.addon(id, map[string]any{"sandbox": map[string]any{"network": "none", "doors": doorsValue}})
		h.write(filepath.Join("bundles", id, "doorcheck.js"), doorcheckJS)
		profiles[id] = map[string]any{"crowDb": false, "storage": false, "firstParty": firstParty}
		// The entry tries to name the token file itself (DOOR-08).
		return map[string]any{"command": "node", "args": []string{filepath.Join(h.paths.InstallDir(id), "doorcheck.js")},
			"env": map[string]string{"CROW_ADDON_DOOR_TOKEN_FILE": filepath.Join(h.paths.InstallDir(id), "my-token")}}
	}
	addons := map[string]any{
		"kiosk":   install("kiosk", "kiosk", true),
		"studio":  install("studio", "studio", true),
		"browser": install("browser", "browser", false), // third-party naming a first-party set
		"sneaky":  install("sneaky", "kiosk", true),     // another id's set
	}
	b, err := json.Marshal(profiles)
	if err != nil {
		t.Fatal(err)
	}
	mkfile(t, filepath.Join(h.paths.Checkout, "registry", "addon-profiles.json"), string(b))
	h.write("mcp-addons.json", addons)

	var logs bytes.Buffer
	var logMu sync.Mutex
	h.run(map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, func(o *runner.Options) {
		o.Log = funcr.New(func(prefix, args string) {
			logMu.Lock()
			defer logMu.Unlock()
			logs.WriteString(prefix + " " + args + "\n")
		}, funcr.Options{Verbosity: 1})
		o.WallPreparer = func(p *wallsession.WallPreparer) {
			p.EntryBinary = entryBin
			env := map[string]string{}
			for k, v := range p.Environ {
				env[k] = v
			}
			env["CROW_GATEWAY_PORT"] = gwPort
			p.Environ = env
		}
	})
	for id := range addons {
		h.waitWord(id, "walled", 20*time.Second)
	}
	refused := func(a netAnswer, reason string) bool {
		return (strings.HasPrefix(a.Status, "HTTP/1.1 401") || strings.HasPrefix(a.Status, "HTTP/1.1 403") || strings.HasPrefix(a.Status, "HTTP/1.1 400")) &&
			strings.Contains(a.Body, reason)
	}
	const kioskDoor = "/kiosk/display-state"
	var tokens []string

	kiosk := h.netConnect("kiosk")
	kioskToken := kiosk.ask("token").Reply
	tokens = append(tokens, kioskToken)
	if len(kioskToken) != 64 {
		t.Fatalf("kiosk's token file holds %d characters, want the 64 of a hex token", len(kioskToken))
	}

	t.Run("a door request with the wall's token reaches the gateway once, without the token", func(t *testing.T) {
		a := kiosk.ask("door GET " + kioskDoor + " file")
		if a.Status != "HTTP/1.1 200 OK" || a.Body != "gateway: GET "+kioskDoor {
			t.Fatalf("kiosk GET %s = %+v, want the gateway's answer", kioskDoor, a)
		}
		if got := gw.requests(); len(got) != 1 || got[0] != "GET "+kioskDoor+" token=false" {
			t.Fatalf("the gateway saw %q, want one GET without the token", got)
		}
	})

	t.Run("no token, a wrong token, a path outside the set, a target read two ways: refused before the gateway", func(t *testing.T) {
		before := len(gw.requests())
		for _, c := range []struct{ op, reason string }{
			{"door GET " + kioskDoor + " none", "NoToken"},
			{"door GET " + kioskDoor + " " + strings.Repeat("ab", 32), "BadToken"},
			{"door GET /admin file", "NotInSet"},
			{"door DELETE " + kioskDoor + " file", "NotInSet"},
			{"door GET //kiosk/display-state file", "BadTarget"},
			{"door GET /kiosk/%64isplay-state file", "BadTarget"},
			{"door GET " + kioskDoor + "?x=1 file", "BadTarget"},
		} {
			if a := kiosk.ask(c.op); !refused(a, c.reason) {
				t.Errorf("%s = %+v, want a refusal naming %s", c.op, a, c.reason)
			}
		}
		if got := gw.requests(); len(got) != before {
			t.Errorf("refused requests reached the gateway: %q", got[before:])
		}
	})

	t.Run("the token file is 0400, read-only, and the wall's own name for it wins", func(t *testing.T) {
		var tf struct{ Env, Mode, Write string }
		if err := json.Unmarshal([]byte(kiosk.ask("tokenfile").Reply), &tf); err != nil {
			t.Fatal(err)
		}
		if tf.Env != "/run/crow-addon/door-token" || tf.Mode != "400" || (tf.Write != "EROFS" && tf.Write != "EACCES") {
			t.Errorf("token file = %+v, want /run/crow-addon/door-token, mode 400, and a write refused", tf)
		}
	})

	t.Run("a token opens only its own add-on's doors", func(t *testing.T) {
		studio := h.netConnect("studio")
		tokens = append(tokens, studio.ask("token").Reply)
		// Positive control: studio's own token and door.
		if a := studio.ask("door POST /studio/song-hub file"); a.Status != "HTTP/1.1 200 OK" {
			t.Errorf("studio POST /studio/song-hub = %+v, want 200", a)
		}
		// Kiosk's live token presented at studio's door, for kiosk's door
		// and for studio's: refused.
		for _, target := range []string{kioskDoor, "/studio/song-hub"} {
			if a := studio.ask("door POST " + target + " " + kioskToken); !refused(a, "BadToken") {
				t.Errorf("studio presenting kiosk's token for %s = %+v, want BadToken", target, a)
			}
		}
		// Studio's own token for kiosk's door: not in its set.
		if a := studio.ask("door GET " + kioskDoor + " file"); !refused(a, "NotInSet") {
			t.Errorf("studio GET %s = %+v, want NotInSet", kioskDoor, a)
		}
		studio.end()
	})

	t.Run("a token is forgotten when its spawn ends", func(t *testing.T) {
		kiosk.end()
		again := h.netConnect("kiosk")
		fresh := again.ask("token").Reply
		tokens = append(tokens, fresh)
		if fresh == kioskToken || len(fresh) != 64 {
			t.Fatalf("the new spawn's token is not a fresh one")
		}
		if a := again.ask("door GET " + kioskDoor + " " + kioskToken); !refused(a, "BadToken") {
			t.Errorf("the previous spawn's token = %+v, want BadToken", a)
		}
		if a := again.ask("door GET " + kioskDoor + " file"); a.Status != "HTTP/1.1 200 OK" {
			t.Errorf("the new spawn's own token = %+v, want 200", a)
		}
		again.end()
	})

	t.Run("a set named by a third-party or for another id gives no door and no token", func(t *testing.T) {
		for _, id := range []string{"browser", "sneaky"} {
			s := h.netConnect(id)
			if a := s.ask("door GET /browser/restart none"); a.Error != "ECONNREFUSED" {
				t.Errorf("%s's door port = %+v, want nothing listening", id, a)
			}
			if tok := s.ask("token").Reply; tok != "" {
				t.Errorf("%s holds a door token", id)
			}
			s.end()
			w, err := h.wall(id)
			if err != nil {
				t.Fatal(err)
			}
			if d := strings.Join(w.Status.Egress.Dropped, "\n"); !strings.Contains(d, "no door and no token") {
				t.Errorf("%s's status.egress.dropped = %q, want the refused door set reported", id, d)
			}
		}
	})

	t.Run("door refusals are counted in status, the token never shown", func(t *testing.T) {
		eventually(t, 20*time.Second, "kiosk's status counts its door refusals", func() (bool, string) {
			w, err := h.wall("kiosk")
			if err != nil {
				return false, err.Error()
			}
			e := w.Status.Egress
			return e.Refusals["DoorNoToken"] >= 1 && e.Refusals["DoorBadToken"] >= 2 && e.Refusals["DoorNotInSet"] >= 2 && e.Refusals["DoorBadTarget"] >= 3,
				fmt.Sprintf("%+v", e)
		})
		// Positive control: studio was refused only what it was refused.
		if w, err := h.wall("studio"); err != nil || w.Status.Egress.Refusals["DoorNoToken"] != 0 || w.Status.Egress.Refusals["DoorBadToken"] < 2 {
			t.Errorf("studio's refusals: %v (%v), want its two BadToken and no NoToken", w.Status.Egress.Refusals, err)
		}
	})

	t.Run("no token is ever logged or stored", func(t *testing.T) {
		logMu.Lock()
		all := logs.String()
		logMu.Unlock()
		if !strings.Contains(all, "door request refused") {
			t.Fatalf("the controller logged no door refusal; the check below would see nothing:\n%s", all)
		}
		var store []byte
		_ = filepath.Walk(h.paths.CrowHome, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() && !strings.Contains(p, "bundles") {
				if b, err := os.ReadFile(p); err == nil {
					store = append(store, b...)
				}
			}
			return nil
		})
		for _, tok := range tokens {
			if tok == "" {
				continue
			}
			if strings.Contains(all, tok) || bytes.Contains(store, []byte(tok)) {
				t.Errorf("a door token appears in the controller's log or under the Crow home")
			}
		}
	})
}
