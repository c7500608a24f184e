package decide

import (
	"fmt"
	"testing"

	v1alpha1 "github.com/addonwall/addonwall/api/v1alpha1"
)

// oracle decides the same question a second way: every rule that applies
// files a claim with its rank, and the lowest rank wins. It shares no code
// with Decide, so a slip in Decide's order shows up as a mismatch.
func oracle(in Input) (v1alpha1.Mode, string, Spawn) {
	type claim struct {
		rank   int
		mode   v1alpha1.Mode
		reason string
		spawn  Spawn
	}
	a, h, s := in.Addon, in.Host, in.Switches
	validChoice := a.OwnerChoice == "" || a.OwnerChoice == "walled" || a.OwnerChoice == "notWalled"
	validTransport := a.Transport == "" || a.Transport == "stdio" || a.Transport == "http"
	unwalledSpawn := SpawnPlain
	if h.SetprivAvailable {
		unwalledSpawn = SpawnSetpriv
	}
	claims := []claim{{99, "Walled", "Walled", SpawnWalled}}
	file := func(applies bool, c claim) {
		if applies {
			claims = append(claims, c)
		}
	}
	file(a.InputProblem != nil || !validChoice || !validTransport, claim{0, "Off", "InvalidInput", SpawnNone})
	file(a.Transport == "http", claim{1, "NotWalled", "HTTPAddon", SpawnNone})
	file(a.ApprovedBackend, claim{2, "NotWalled", "ApprovedCommands", SpawnPlain})
	file(s.KillSwitch, claim{3, "NotWalled", "KillSwitch", SpawnPlain})
	file(s.HostDefault != "walled", claim{4, "NotWalled", "HostDefaultOff", SpawnPlain})
	file(a.OwnerChoice == "notWalled", claim{5, "NotWalled", "OwnerChoice", SpawnPlain})
	file(!h.BubblewrapInstalled, claim{6, "NotWalled", "NoBubblewrap", unwalledSpawn})
	file(h.BubblewrapInstalled && !h.BubblewrapUsable, claim{7, "Off", "BubblewrapUnusable", SpawnNone})
	file(a.CrowDb, claim{8, "NotWalled", "SharesCrowDatabase", SpawnWalled})
	file(a.Storage, claim{9, "NotWalled", "UsesAllStorage", SpawnWalled})
	best := claims[0]
	for _, c := range claims[1:] {
		if c.rank < best.rank {
			best = c
		}
	}
	return best.mode, best.reason, best.spawn
}

// allInputs is the cartesian product of every input the decision reads,
// including values outside the api's enums.
func allInputs() []Input {
	bools := []bool{false, true}
	problems := []*v1alpha1.InputProblem{nil, {File: "manifest.json", Key: "sandbox.network", Message: "unknown key"}}
	transports := []v1alpha1.Transport{"", "stdio", "http", "carrier-pigeon"}
	choices := []v1alpha1.OwnerChoice{"", "walled", "notWalled", "Walled"}
	defaults := []HostDefault{HostWalled, HostOff}
	var out []Input
	for _, p := range problems {
		for _, tr := range transports {
			for _, ch := range choices {
				for _, ab := range bools {
					for _, ks := range bools {
						for _, hd := range defaults {
							for _, db := range bools {
								for _, st := range bools {
									for _, inst := range bools {
										for _, use := range bools {
											for _, sp := range bools {
												out = append(out, Input{
													Switches: Switches{KillSwitch: ks, HostDefault: hd},
													Host:     Host{BubblewrapInstalled: inst, BubblewrapUsable: use, SetprivAvailable: sp, ProbeReason: "UserNamespacesRefused"},
													Addon:    Addon{InputProblem: p, Transport: tr, OwnerChoice: ch, ApprovedBackend: ab, CrowDb: db, Storage: st},
												})
											}
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

func TestDecideEveryCombination(t *testing.T) {
	inputs := allInputs()
	if len(inputs) != 2*4*4*2*2*2*2*2*2*2*2 {
		t.Fatalf("product has %d rows", len(inputs))
	}
	seen := map[string]int{}
	for _, in := range inputs {
		d := Decide(in)
		mode, reason, spawn := oracle(in)
		if d.Mode != mode || d.Reason != reason || d.Spawn != spawn {
			t.Fatalf("Decide(%+v) = %s/%s/%s, oracle says %s/%s/%s", in, d.Mode, d.Reason, d.Spawn, mode, reason, spawn)
		}
		seen[reason]++
		checkInvariants(t, in, d)
	}
	// Every outcome the decision can give was reached by some row, so the
	// product is not silently missing a branch.
	for _, r := range []string{"Walled", "SharesCrowDatabase", "UsesAllStorage", "OwnerChoice", "HostDefaultOff", "KillSwitch", "NoBubblewrap", "ApprovedCommands", "HTTPAddon", "BubblewrapUnusable", "InvalidInput"} {
		if seen[r] == 0 {
			t.Errorf("no input reached %s", r)
		}
	}
}

// checkInvariants states the security rules as formulas over the inputs,
// independent of the order of the rules.
func checkInvariants(t *testing.T, in Input, d Decision) {
	t.Helper()
	a, h, s := in.Addon, in.Host, in.Switches
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%+v -> %+v: %s", in, d, fmt.Sprintf(format, args...))
	}
	// A walled spawn needs a usable bubblewrap, walls on, and nobody who
	// chose otherwise.
	if d.Walled() && (!h.BubblewrapInstalled || !h.BubblewrapUsable || !s.WallsOn() || a.OwnerChoice == "notWalled" || a.ApprovedBackend) {
		fail("walled spawn without the conditions for one")
	}
	// Fail closed: a host that has bubblewrap but cannot use it never
	// starts an add-on that walls would apply to.
	if h.BubblewrapInstalled && !h.BubblewrapUsable && d.Spawn != SpawnNone && d.Reason != "ApprovedCommands" &&
		s.WallsOn() && a.OwnerChoice != "notWalled" {
		fail("started a process with a broken bubblewrap")
	}
	// setpriv belongs to the no-bubblewrap case only.
	if d.Spawn == SpawnSetpriv && (d.Reason != "NoBubblewrap" || !h.SetprivAvailable) {
		fail("setpriv outside the no-bubblewrap case")
	}
	if d.Reason == "NoBubblewrap" && h.SetprivAvailable && d.Spawn != SpawnSetpriv {
		fail("no bubblewrap and setpriv exists, but the child is not under setpriv")
	}
	// Off starts nothing and says why; the others start per their spawn.
	if d.Mode == "Off" && (d.Spawn != SpawnNone || d.Detail == "") {
		fail("off with a spawn or without a detail")
	}
	// Walled mode is exactly the Walled reason.
	if (d.Mode == "Walled") != (d.Reason == "Walled") {
		fail("mode and reason disagree")
	}
	// crow.db is bound only for a crow.db reader's walled spawn.
	if d.BindCrowDatabase != (d.Reason == "SharesCrowDatabase") || (d.BindCrowDatabase && !d.Walled()) {
		fail("crow.db bound wrongly")
	}
	if d.BindCrowDatabase && !a.CrowDb {
		fail("crow.db bound for an add-on that does not read it")
	}
	// An http add-on never gets a process, whatever else is true.
	if a.Transport == "http" && d.Spawn != SpawnNone {
		fail("process for an http add-on")
	}
	// Every decision has a word in both languages.
	for _, l := range Langs {
		if Word(d.Reason, l) == "" {
			fail("no %s word for %s", l, d.Reason)
		}
	}
}

// Hand-picked rows from CROW-NOTES §6, items 1–9, starting from the
// environment as the controller would read it.
func TestDecideChecklist(t *testing.T) {
	goodHost := Host{BubblewrapInstalled: true, BubblewrapUsable: true, SetprivAvailable: true}
	tests := []struct {
		item  string
		env   map[string]string
		host  Host
		addon Addon
		word  string
		mode  v1alpha1.Mode
		spawn Spawn
	}{
		{"1 no env", nil, goodHost, Addon{},
			"not walled (switched off for this computer)", "NotWalled", SpawnPlain},
		{"2 default walled", map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, goodHost, Addon{},
			"walled", "Walled", SpawnWalled},
		{"3 default off", map[string]string{"CROW_ADDON_WALLS_DEFAULT": "off"}, goodHost, Addon{},
			"not walled (switched off for this computer)", "NotWalled", SpawnPlain},
		{"4 'Walled ' reads as the code default", map[string]string{"CROW_ADDON_WALLS_DEFAULT": "Walled "}, goodHost, Addon{OwnerChoice: "walled"},
			"not walled (switched off for this computer)", "NotWalled", SpawnPlain},
		{"4 empty reads as the code default", map[string]string{"CROW_ADDON_WALLS_DEFAULT": ""}, goodHost, Addon{},
			"not walled (switched off for this computer)", "NotWalled", SpawnPlain},
		{"5 kill switch beats default and owner", map[string]string{"CROW_ADDON_WALLS": "off", "CROW_ADDON_WALLS_DEFAULT": "walled"}, goodHost, Addon{OwnerChoice: "walled"},
			"not walled (switched off by the operator)", "NotWalled", SpawnPlain},
		{"6 owner chose not walled", map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, goodHost, Addon{OwnerChoice: "notWalled"},
			"not walled (your choice)", "NotWalled", SpawnPlain},
		{"9 no bubblewrap, setpriv there", map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, Host{SetprivAvailable: true}, Addon{},
			"not walled on this computer; docker reachable", "NotWalled", SpawnSetpriv},
		{"9 no bubblewrap, no setpriv", map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, Host{}, Addon{CrowDb: true},
			"not walled on this computer; docker reachable", "NotWalled", SpawnPlain},
		{"10 bubblewrap unusable: off, no fallback", map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, Host{BubblewrapInstalled: true, SetprivAvailable: true, ProbeReason: "UserNamespacesRefused", ProbeMessage: "set kernel.unprivileged_userns_clone=1"}, Addon{},
			"off: it could not run inside its wall", "Off", SpawnNone},
		{"29 crow.db reader", map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, goodHost, Addon{CrowDb: true, Storage: true},
			"not walled: shares Crow's database", "NotWalled", SpawnWalled},
		{"30 storage reader", map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, goodHost, Addon{Storage: true},
			"not walled: can use all of Crow's storage", "NotWalled", SpawnWalled},
		{"approved backend", map[string]string{"CROW_ADDON_WALLS_DEFAULT": "walled"}, goodHost, Addon{ApprovedBackend: true},
			"not walled (approved commands)", "NotWalled", SpawnPlain},
		{"http add-on runs nothing here", map[string]string{"CROW_ADDON_WALLS": "off"}, goodHost, Addon{Transport: "http"},
			"not started by Crow: reached over HTTP", "NotWalled", SpawnNone},
		{"bad input beats everything", map[string]string{"CROW_ADDON_WALLS": "off"}, goodHost, Addon{Transport: "http", InputProblem: &v1alpha1.InputProblem{File: "f", Message: "m"}},
			"off: it could not run inside its wall", "Off", SpawnNone},
	}
	for _, tt := range tests {
		t.Run(tt.item, func(t *testing.T) {
			sw := ReadSwitches(func(k string) string { return tt.env[k] })
			d := Decide(Input{Switches: sw, Host: tt.host, Addon: tt.addon})
			if got := Word(d.Reason, LangEN); got != tt.word || d.Mode != tt.mode || d.Spawn != tt.spawn {
				t.Fatalf("got %q %s %s, want %q %s %s", got, d.Mode, d.Spawn, tt.word, tt.mode, tt.spawn)
			}
		})
	}
}

func TestDecideDetail(t *testing.T) {
	d := Decide(Input{Switches: Switches{HostDefault: HostWalled}, Host: Host{BubblewrapInstalled: true, ProbeReason: "UserNamespacesRefused", ProbeMessage: "sysctl kernel.unprivileged_userns_clone=0"}})
	if d.Detail != "UserNamespacesRefused: sysctl kernel.unprivileged_userns_clone=0" {
		t.Fatalf("probe detail = %q", d.Detail)
	}
	d = Decide(Input{Switches: Switches{HostDefault: HostWalled}, Host: Host{BubblewrapInstalled: true}})
	if d.Detail != "ProbeFailed" {
		t.Fatalf("probe detail without a reason = %q", d.Detail)
	}
	d = Decide(Input{Addon: Addon{InputProblem: &v1alpha1.InputProblem{File: "/h/.crow/bundles/x/manifest.json", Key: "sandbox.files.read[0]", Message: "not an env field"}}})
	if d.Detail != "/h/.crow/bundles/x/manifest.json: sandbox.files.read[0]: not an env field" {
		t.Fatalf("input detail = %q", d.Detail)
	}
	d = Decide(Input{Addon: Addon{OwnerChoice: "maybe"}})
	if d.Reason != "InvalidInput" || d.Detail != `addon-walls.json: choice "maybe" is not walled or notWalled` {
		t.Fatalf("bad choice = %+v", d)
	}
}
