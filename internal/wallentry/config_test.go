package wallentry

import (
	"reflect"
	"strings"
	"testing"

	"github.com/addonwall/addonwall/internal/egress"
)

const sock = "/run/addonwall/relay/relay.sock"

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name, doc, wantErr string
	}{
		{name: "proxy only", doc: `{"relaySocket":"` + sock + `","proxyPort":39080}`},
		{name: "forwards", doc: `{"relaySocket":"` + sock + `","proxyPort":39080,"forwards":[{"listen":"127.0.0.1:5432","target":"localhost:5432"},{"listen":"[::1]:5432","target":"localhost:5432","optional":true}]}`},
		{name: "unknown key", doc: `{"relaySocket":"` + sock + `","proxyPort":39080,"token":"x"}`, wantErr: "unknown field"},
		{name: "trailing data", doc: `{"relaySocket":"` + sock + `","proxyPort":39080} {}`, wantErr: "after its object"},
		{name: "relative socket", doc: `{"relaySocket":"relay.sock","proxyPort":39080}`, wantErr: "clean absolute"},
		{name: "socket path too long", doc: `{"relaySocket":"/` + strings.Repeat("a", 120) + `","proxyPort":39080}`, wantErr: "107"},
		{name: "no proxy port", doc: `{"relaySocket":"` + sock + `"}`, wantErr: "proxyPort 0"},
		{name: "proxy port out of range", doc: `{"relaySocket":"` + sock + `","proxyPort":65536}`, wantErr: "proxyPort 65536"},
		{name: "forward on a non-loopback address", doc: `{"relaySocket":"` + sock + `","proxyPort":39080,"forwards":[{"listen":"0.0.0.0:5432","target":"localhost:5432"}]}`, wantErr: "not a loopback"},
		{name: "forward on a mapped address", doc: `{"relaySocket":"` + sock + `","proxyPort":39080,"forwards":[{"listen":"[::ffff:127.0.0.1]:5432","target":"localhost:5432"}]}`, wantErr: "not a loopback"},
		{name: "forward on the proxy's port", doc: `{"relaySocket":"` + sock + `","proxyPort":5432,"forwards":[{"listen":"127.0.0.1:5432","target":"localhost:5432"}]}`, wantErr: "proxy's port"},
		{name: "forward listed twice", doc: `{"relaySocket":"` + sock + `","proxyPort":39080,"forwards":[{"listen":"127.0.0.1:5432","target":"localhost:5432"},{"listen":"127.0.0.1:5432","target":"127.0.0.1:5432"}]}`, wantErr: "twice"},
		{name: "target not in the relay's spelling", doc: `{"relaySocket":"` + sock + `","proxyPort":39080,"forwards":[{"listen":"127.0.0.1:5432","target":"LOCALHOST:5432"}]}`, wantErr: "spelling"},
		{name: "plain-HTTP target", doc: `{"relaySocket":"` + sock + `","proxyPort":39080,"forwards":[{"listen":"127.0.0.1:80","target":"http://nas.lan"}]}`, wantErr: "spelling"},
		{name: "a door", doc: `{"relaySocket":"` + sock + `","proxyPort":39080,"doorPort":3001,"doorSocket":"/run/addonwall/relay/door.sock"}`},
		{name: "a door port without its socket", doc: `{"relaySocket":"` + sock + `","proxyPort":39080,"doorPort":3001}`, wantErr: "together"},
		{name: "a door socket without its port", doc: `{"relaySocket":"` + sock + `","proxyPort":39080,"doorSocket":"/d"}`, wantErr: "together"},
		{name: "a relative door socket", doc: `{"relaySocket":"` + sock + `","proxyPort":39080,"doorPort":3001,"doorSocket":"door.sock"}`, wantErr: "doorSocket"},
		{name: "the door on the proxy's port", doc: `{"relaySocket":"` + sock + `","proxyPort":3001,"doorPort":3001,"doorSocket":"/d"}`, wantErr: "doorPort 3001"},
		{name: "a forward on the door's port", doc: `{"relaySocket":"` + sock + `","proxyPort":39080,"doorPort":5432,"doorSocket":"/d","forwards":[{"listen":"127.0.0.1:5432","target":"localhost:5432"}]}`, wantErr: "door's port"},
		{name: "target with userinfo", doc: `{"relaySocket":"` + sock + `","proxyPort":39080,"forwards":[{"listen":"127.0.0.1:80","target":"u@nas.lan:80"}]}`, wantErr: "spelling"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(c.doc))
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseConfig: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("ParseConfig = %v, want %q", err, c.wantErr)
			}
		})
	}
}

func listed(t *testing.T, values ...string) egress.Rules {
	t.Helper()
	var r egress.Rules
	for _, v := range values {
		l, err := egress.ParseListed(v, true)
		if err != nil {
			t.Fatal(err)
		}
		r.Listed = append(r.Listed, l)
	}
	return r
}

func TestConfigFor(t *testing.T) {
	cases := []struct {
		name        string
		rules       egress.Rules
		door        Door
		wantPort    int
		wantForward []Forward
		wantSkipped int
	}{
		{name: "network none: the proxy alone", wantPort: 39080},
		{name: "internet: the proxy alone", rules: egress.Rules{Internet: true}, wantPort: 39080},
		{name: "a public listed host is reached through the proxy", rules: listed(t, "printer.lan:631", "http://nas.lan:8080"), wantPort: 39080},
		{name: "a loopback literal is forwarded at itself", rules: listed(t, "127.0.0.1:5432"), wantPort: 39080,
			wantForward: []Forward{{Listen: "127.0.0.1:5432", Target: "127.0.0.1:5432"}}},
		{name: "localhost is forwarded on both loopbacks, ::1 optional", rules: listed(t, "localhost:6379"), wantPort: 39080,
			wantForward: []Forward{{Listen: "127.0.0.1:6379", Target: "localhost:6379"}, {Listen: "[::1]:6379", Target: "localhost:6379", Optional: true}}},
		{name: "::1 is forwarded, optional", rules: listed(t, "[::1]:8000"), wantPort: 39080,
			wantForward: []Forward{{Listen: "[::1]:8000", Target: "[::1]:8000", Optional: true}}},
		{name: "a listed port on 39080 bumps the proxy", rules: listed(t, "127.0.0.1:39080", "127.0.0.2:39081"), wantPort: 39082,
			wantForward: []Forward{{Listen: "127.0.0.1:39080", Target: "127.0.0.1:39080"}, {Listen: "127.0.0.2:39081", Target: "127.0.0.2:39081"}}},
		{name: "a privileged loopback port gets no forwarder", rules: listed(t, "127.0.0.1:80", "localhost:8080"), wantPort: 39080,
			wantForward: []Forward{{Listen: "127.0.0.1:8080", Target: "localhost:8080"}, {Listen: "[::1]:8080", Target: "localhost:8080", Optional: true}}, wantSkipped: 1},
		{name: "a second entry on the same loopback port gets no forwarder", rules: listed(t, "127.0.0.1:5432", "localhost:5432"), wantPort: 39080,
			wantForward: []Forward{{Listen: "127.0.0.1:5432", Target: "127.0.0.1:5432"}}, wantSkipped: 1},
		{name: "the door holds the gateway's port; no forwarder takes it", rules: listed(t, "127.0.0.1:3001", "127.0.0.1:5432"),
			door: Door{Port: 3001, Socket: "/run/addonwall/relay/door.sock"}, wantPort: 39080,
			wantForward: []Forward{{Listen: "127.0.0.1:5432", Target: "127.0.0.1:5432"}}, wantSkipped: 1},
		{name: "a door on 39080 bumps the proxy", door: Door{Port: 39080, Socket: "/run/addonwall/relay/door.sock"}, wantPort: 39081},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, skipped := ConfigFor(c.rules, sock, c.door)
			if cfg.ProxyPort != c.wantPort || !reflect.DeepEqual(cfg.Forwards, c.wantForward) || len(skipped) != c.wantSkipped ||
				cfg.DoorPort != c.door.Port || cfg.DoorSocket != c.door.Socket {
				t.Fatalf("ConfigFor = port %d, forwards %+v, skipped %q; want %d, %+v, %d", cfg.ProxyPort, cfg.Forwards, skipped, c.wantPort, c.wantForward, c.wantSkipped)
			}
			// What ConfigFor makes, the entry reads back unchanged.
			data, err := cfg.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseConfig(data)
			if err != nil || !reflect.DeepEqual(back, cfg) {
				t.Fatalf("round trip: %+v, %v; want %+v", back, err, cfg)
			}
		})
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"relaySocket":"/run/addonwall/relay/relay.sock","proxyPort":39080,"forwards":[{"listen":"127.0.0.1:5432","target":"localhost:5432"}]}`))
	f.Add([]byte(`{"relaySocket":"/r","proxyPort":1,"forwards":[{"listen":"[::1]:2","target":"[::1]:2","optional":true}]}`))
	f.Add([]byte(`{"relaySocket":"/r","proxyPort":39080,"doorPort":3001,"doorSocket":"/d"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		// An accepted config is valid, and survives a round trip.
		out, err := c.Marshal()
		if err != nil {
			t.Fatalf("an accepted config does not marshal: %v", err)
		}
		back, err := ParseConfig(out)
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("round trip of an accepted config: %+v, %v", back, err)
		}
	})
}
