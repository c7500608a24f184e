package session

import (
	"strings"
	"testing"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/crowhome"
	"github.com/addonwall/addonwall/internal/egress"
)

func TestHostsValue(t *testing.T) {
	cases := []struct {
		in, authority, scheme, wantErr string
	}{
		{in: "printer.lan:631", authority: "printer.lan:631"},
		{in: "https://api.example.com", authority: "api.example.com:443", scheme: "https"},
		{in: "HTTPS://api.example.com:8443/v1?x=1", authority: "api.example.com:8443", scheme: "https"},
		{in: "http://nas.lan/share", authority: "nas.lan:80", scheme: "http"},
		{in: "postgres://app:s3cret@db.lan:5432/app", authority: "db.lan:5432", scheme: "postgres"},
		{in: "http://[::1]:8080/", authority: "[::1]:8080", scheme: "http"},
		{in: "https://[::1]", authority: "[::1]:443", scheme: "https"},
		{in: "redis://cache.lan", wantErr: "no port"},
		{in: "printer.lan", wantErr: "no port"},
		{in: "https://", wantErr: "no host"},
		{in: "ht tp://x:1", wantErr: "not a scheme"},
	}
	for _, c := range cases {
		a, s, err := hostsValue(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("hostsValue(%q) = %q %q %v, want %q", c.in, a, s, err, c.wantErr)
			}
			continue
		}
		if err != nil || a != c.authority || s != c.scheme {
			t.Errorf("hostsValue(%q) = %q %q %v, want %q %q", c.in, a, s, err, c.authority, c.scheme)
		}
	}
}

// The seed's rules for network.hosts: an owner-typed value is listed
// exactly; a manifest default only when it is loopback on a port the
// add-on's own compose publishes on 127.0.0.1/tcp and not the gateway's; a
// public https default is the internet's or refused; the rest dropped and
// reported. Each refusal has its positive control beside it.
func TestNetworkRules(t *testing.T) {
	compose := []wallsv1.ComposePort{
		{Address: "127.0.0.1", Port: 8080, Protocol: "tcp"},
		{Address: "0.0.0.0", Port: 9090, Protocol: "tcp"},
		{Address: "127.0.0.1", Port: 5353, Protocol: "udp"},
		{Address: "127.0.0.1", Port: 3001, Protocol: "tcp"},
	}
	type want struct {
		listed  []string // egress.Listed.String() of each entry, in order
		dropped []string // substrings, one per dropped value, in order
	}
	cases := []struct {
		name     string
		internet bool
		field    wallsv1.EnvField
		value    string
		want     want
	}{
		{name: "owner-typed host:port is listed", field: typed("PRINTER"), value: "printer.lan:631", want: want{listed: []string{"printer.lan:631"}}},
		{name: "owner-typed private https is listed on 443", field: typed("NAS"), value: "https://192.168.1.5", want: want{listed: []string{"192.168.1.5:443"}}},
		{name: "owner-typed plain http is a plain-HTTP entry", field: typed("NAS"), value: "http://nas.lan:8080/api", want: want{listed: []string{"http://nas.lan:8080"}}},
		{name: "owner-typed loopback http is a forwarded entry", field: typed("OLLAMA"), value: "http://localhost:11434", want: want{listed: []string{"localhost:11434"}}},
		{name: "owner-typed URL with a password is listed, password left out", field: typed("DB"), value: "postgres://u:hunter2@db.lan:5432/x", want: want{listed: []string{"db.lan:5432"}}},
		{name: "owner-typed garbage is dropped without its value", field: typed("DB"), value: "postgres://u:hunter2@db.lan/x", want: want{dropped: []string{"network.hosts DB: its value is not host:port"}}},
		{name: "default on a loopback port its compose publishes is kept", field: dflt("SVC"), value: "http://127.0.0.1:8080", want: want{listed: []string{"127.0.0.1:8080"}}},
		{name: "default on localhost and a published port is kept", field: dflt("SVC"), value: "localhost:8080", want: want{listed: []string{"localhost:8080"}}},
		{name: "default on a port published on every address is dropped", field: dflt("SVC"), value: "127.0.0.1:9090", want: want{dropped: []string{"does not publish on 127.0.0.1/tcp"}}},
		{name: "default on a udp-published port is dropped", field: dflt("SVC"), value: "127.0.0.1:5353", want: want{dropped: []string{"does not publish on 127.0.0.1/tcp"}}},
		{name: "default on an unpublished loopback port is dropped", field: dflt("SVC"), value: "127.0.0.1:7000", want: want{dropped: []string{"does not publish"}}},
		{name: "default on the gateway's port is refused, even when published", field: dflt("SVC"), value: "http://127.0.0.1:3001", want: want{dropped: []string{"gateway's own port"}}},
		{name: "default on the gateway's other port is refused", field: dflt("SVC"), value: "localhost:3004", want: want{dropped: []string{"gateway's own port"}}},
		{name: "public https default with the internet needs no entry", internet: true, field: dflt("API"), value: "https://api.example.com/v1", want: want{}},
		{name: "public https default without the internet is refused", field: dflt("API"), value: "https://api.example.com/v1", want: want{dropped: []string{"has no internet"}}},
		{name: "https default on another port is dropped, internet or not", internet: true, field: dflt("API"), value: "https://api.example.com:8443", want: want{dropped: []string{"owner must type it"}}},
		{name: "LAN default is dropped", field: dflt("NAS"), value: "nas.lan:445", want: want{dropped: []string{"owner must type it"}}},
		{name: "plain-http LAN default is dropped", field: dflt("NAS"), value: "http://nas.lan", want: want{dropped: []string{"owner must type it"}}},
		{name: "unset field lists nothing", field: typed("NONE"), want: want{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prof := wallsv1.Profile{Network: wallsv1.NetworkProfile{Internet: c.internet, Hosts: []wallsv1.EnvField{c.field}}, ComposePorts: compose}
			vals := map[string]string{}
			if c.value != "" {
				vals[c.field.Name] = c.value
			}
			rules, dropped := networkRules(prof, crowhome.NewEnv(vals))
			if rules.Internet != c.internet {
				t.Fatalf("internet = %v", rules.Internet)
			}
			var got []string
			for _, l := range rules.Listed {
				got = append(got, l.String())
				if l.OwnerTyped != c.field.OwnerTyped {
					t.Errorf("%s: ownerTyped %v, want %v", l, l.OwnerTyped, c.field.OwnerTyped)
				}
			}
			if strings.Join(got, ",") != strings.Join(c.want.listed, ",") {
				t.Errorf("listed %q, want %q", got, c.want.listed)
			}
			if len(dropped) != len(c.want.dropped) {
				t.Fatalf("dropped %q, want %d like %q", dropped, len(c.want.dropped), c.want.dropped)
			}
			for i, d := range dropped {
				if !strings.Contains(d, c.want.dropped[i]) || !strings.HasPrefix(d, "network.hosts "+c.field.Name+":") {
					t.Errorf("dropped[%d] = %q, want it to name the field and say %q", i, d, c.want.dropped[i])
				}
				if strings.Contains(d, "hunter2") {
					t.Errorf("a dropped value's report shows a password: %q", d)
				}
			}
		})
	}
}

// A relay built from the rules judges a kept default and an owner-typed
// entry as what they are.
func TestNetworkRulesMeetThePolicy(t *testing.T) {
	prof := wallsv1.Profile{
		Network:      wallsv1.NetworkProfile{Hosts: []wallsv1.EnvField{dflt("SVC"), typed("NAS")}},
		ComposePorts: []wallsv1.ComposePort{{Address: "127.0.0.1", Port: 8080, Protocol: "tcp"}},
	}
	rules, dropped := networkRules(prof, crowhome.NewEnv(map[string]string{"SVC": "127.0.0.1:8080", "NAS": "http://nas.lan:8080"}))
	if len(dropped) != 0 || len(rules.Listed) != 2 {
		t.Fatalf("rules %+v, dropped %q", rules, dropped)
	}
	want := []egress.Listed{
		{Host: "127.0.0.1", Port: 8080},
		{Host: "nas.lan", Port: 8080, PlainHTTP: true, OwnerTyped: true},
	}
	for i, l := range rules.Listed {
		if l != want[i] {
			t.Errorf("listed[%d] = %+v, want %+v", i, l, want[i])
		}
	}
}

func typed(name string) wallsv1.EnvField { return wallsv1.EnvField{Name: name, OwnerTyped: true} }
func dflt(name string) wallsv1.EnvField  { return wallsv1.EnvField{Name: name} }

func TestParseDenyList(t *testing.T) {
	got, err := parseDenyList([]string{"203.0.113.7", "10.0.0.0/8", "2001:db8::1/64", "::ffff:198.51.100.0/120"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"203.0.113.7/32", "10.0.0.0/8", "2001:db8::/64", "::ffff:198.51.100.0/120"}
	for i, p := range got {
		if p.String() != want[i] {
			t.Errorf("deny[%d] = %s, want %s", i, p, want[i])
		}
	}
	for _, bad := range []string{"bad.example", "10.0.0.0/33", "fe80::1%eth0", "", "10.0.0.1 "} {
		if _, err := parseDenyList([]string{"10.0.0.0/8", bad}); err == nil || !strings.Contains(err.Error(), "egressDenyList[1]") {
			t.Errorf("deny list entry %q: %v, want a refusal naming the entry", bad, err)
		}
	}
}
