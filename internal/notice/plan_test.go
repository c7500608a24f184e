package notice

import (
	"strings"
	"testing"

	v1alpha1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/decide"
)

var (
	wallsOn  = decide.Switches{HostDefault: decide.HostWalled}
	wallsOff = decide.Switches{HostDefault: decide.HostOff}
	killed   = decide.Switches{KillSwitch: true, HostDefault: decide.HostWalled}
	killedHD = decide.Switches{KillSwitch: true, HostDefault: decide.HostOff}
)

func entry(id string, mode v1alpha1.Mode, reason string) Entry {
	return Entry{ID: id, Mode: mode, Reason: reason}
}

var (
	walled    = entry("notes", "Walled", "Walled")
	walled2   = Entry{ID: "fetch", Mode: "Walled", Reason: "Walled", Reach: decide.ReachFacts{Internet: true}}
	crowDb    = Entry{ID: "funkwhale", Mode: "NotWalled", Reason: "SharesCrowDatabase", Reach: decide.ReachFacts{CrowDb: true}}
	mine      = entry("kb", "NotWalled", "OwnerChoice")
	backend   = entry("pg-backend", "NotWalled", "ApprovedCommands")
	noBwrap   = entry("notes", "NotWalled", "NoBubblewrap")
	httpAddon = entry("web", "NotWalled", "HTTPAddon")
	offAddon  = entry("broken", "Off", "WallFailed")
	ks        = entry("notes", "NotWalled", "KillSwitch")
	hostOff   = entry("notes", "NotWalled", "HostDefaultOff")
)

type want struct {
	kind   Kind
	marker Marker
	lines  []string // body lines, exactly
}

func TestPlanBoot(t *testing.T) {
	tests := []struct {
		item string
		in   BootInput
		want []want
	}{
		// 62: walls off and no kill switch: nothing, whatever else holds.
		{"62 walls off, never announced", BootInput{Switches: wallsOff, Entries: []Entry{hostOff, backend}}, nil},
		{"62 walls off, after walls were on once", BootInput{Switches: wallsOff, Entries: []Entry{hostOff}, Announced: Announced{WallsOn: true}}, nil},
		{"62 walls off, no add-ons", BootInput{Switches: wallsOff}, nil},

		// 58: per boot, walls on and something not walled.
		{"58 walls on, an owner choice and a backend", BootInput{Switches: wallsOn, Entries: []Entry{walled, mine, backend, httpAddon, offAddon}, Announced: Announced{WallsOn: true}},
			[]want{{KindSomeNotWalled, MarkerNone, []string{
				"These run without a wall on this computer:",
				"- kb: not walled (your choice)",
				"- pg-backend: not walled (approved commands)",
				"The kill switch is not set. CROW_ADDON_WALLS=off in the gateway's environment turns every wall off at once.",
			}}}},
		{"58 walls on, crow.db reader counts as not walled", BootInput{Switches: wallsOn, Entries: []Entry{crowDb}, Announced: Announced{WallsOn: true}},
			[]want{{KindSomeNotWalled, MarkerNone, []string{
				"These run without a wall on this computer:",
				"- funkwhale: not walled: shares Crow's database",
				"The kill switch is not set. CROW_ADDON_WALLS=off in the gateway's environment turns every wall off at once.",
			}}}},
		{"58 walls on, everything walled: no per-boot note", BootInput{Switches: wallsOn, Entries: []Entry{walled, walled2, httpAddon, offAddon}, Announced: Announced{WallsOn: true}}, nil},
		{"58 kill switch after its first boot", BootInput{Switches: killed, Entries: []Entry{ks, backend}, Announced: Announced{KillSwitch: true}},
			[]want{{KindSomeNotWalled, MarkerNone, []string{
				"These run without a wall on this computer:",
				"- notes: not walled (switched off by the operator)",
				"- pg-backend: not walled (approved commands)",
				"The kill switch is set (CROW_ADDON_WALLS=off), so every wall on this computer is off. Remove it and restart the gateway to turn walls back on.",
			}}}},
		{"58 kill switch with no add-ons still says so", BootInput{Switches: killedHD, Announced: Announced{KillSwitch: true}},
			[]want{{KindSomeNotWalled, MarkerNone, []string{
				"These run without a wall on this computer:",
				"(no add-ons)",
				"The kill switch is set (CROW_ADDON_WALLS=off), so every wall on this computer is off. Remove it and restart the gateway to turn walls back on.",
			}}}},

		// 59: first boot with walls really on, once.
		{"59 first boot with walls on", BootInput{Switches: wallsOn, Entries: []Entry{walled2, walled, crowDb}},
			[]want{
				{KindWallsNowOn, MarkerWallsOn, []string{
					"Each add-on below now runs inside its own wall and can reach only what is listed:",
					"- fetch: network: internet (HTTPS, port 443); files: its own data folder; doors: none",
					"- funkwhale: network: none; files: its own data folder; doors: none; it can also read Crow's stored keys and change its database",
					"- notes: network: none; files: its own data folder; doors: none",
					"Bots' and satellites' copies of add-ons, and approved data backends, are not walled.",
				}},
				{KindSomeNotWalled, MarkerNone, []string{
					"These run without a wall on this computer:",
					"- funkwhale: not walled: shares Crow's database",
					"The kill switch is not set. CROW_ADDON_WALLS=off in the gateway's environment turns every wall off at once.",
				}},
			}},
		{"59 announced already: not again", BootInput{Switches: wallsOn, Entries: []Entry{walled}, Announced: Announced{WallsOn: true}}, nil},
		{"59 walls on but nothing runs in a wall (no bubblewrap): not announced", BootInput{Switches: wallsOn, Entries: []Entry{noBwrap}},
			[]want{{KindSomeNotWalled, MarkerNone, []string{
				"These run without a wall on this computer:",
				"- notes: not walled on this computer; docker reachable",
				"The kill switch is not set. CROW_ADDON_WALLS=off in the gateway's environment turns every wall off at once.",
			}}}},
		{"59 walls on but every add-on off: nothing", BootInput{Switches: wallsOn, Entries: []Entry{offAddon, httpAddon}}, nil},

		// 60: the kill switch on the first boot of a build with walls.
		{"60 kill switch, first boot: one kill-switch note instead", BootInput{Switches: killed, Entries: []Entry{ks, httpAddon}},
			[]want{{KindKillSwitch, MarkerKillSwitch, []string{
				"This version of Crow can run add-ons inside walls, but the operator set CROW_ADDON_WALLS=off, so none of them runs walled on this computer:",
				"- notes: not walled (switched off by the operator)",
				"The kill switch is set (CROW_ADDON_WALLS=off), so every wall on this computer is off. Remove it and restart the gateway to turn walls back on.",
			}}}},
		{"60 kill switch after walls ran here: the per-boot note", BootInput{Switches: killedHD, Entries: []Entry{ks}, Announced: Announced{WallsOn: true}},
			[]want{{KindSomeNotWalled, MarkerNone, nil}}},
	}
	for _, tt := range tests {
		t.Run(tt.item, func(t *testing.T) {
			got := PlanBoot(tt.in)
			if len(got) != len(tt.want) {
				t.Fatalf("planned %d notes, want %d: %+v", len(got), len(tt.want), got)
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Notice.Kind != w.kind || g.Marker != w.marker {
					t.Fatalf("note %d is %s/%q, want %s/%q", i, g.Notice.Kind, g.Marker, w.kind, w.marker)
				}
				if g.Notice.Title == "" || g.Notice.Lang != "en" || !g.Notice.Time.IsZero() {
					t.Fatalf("note %d: title %q lang %q time %v", i, g.Notice.Title, g.Notice.Lang, g.Notice.Time)
				}
				if w.lines != nil {
					if body := strings.Join(w.lines, "\n"); g.Notice.Body != body {
						t.Fatalf("note %d body:\n%s\nwant:\n%s", i, g.Notice.Body, body)
					}
				}
			}
		})
	}
}

func TestPlanBootTitles(t *testing.T) {
	titles := map[Kind]string{
		KindSomeNotWalled: "Some add-ons are not walled",
		KindWallsNowOn:    "Add-ons now run inside walls on this computer",
		KindKillSwitch:    "Add-on walls are switched off by the operator",
	}
	for _, in := range []BootInput{
		{Switches: wallsOn, Entries: []Entry{walled, mine}},
		{Switches: killed, Entries: []Entry{ks}},
	} {
		for _, p := range PlanBoot(in) {
			if p.Notice.Title != titles[p.Notice.Kind] {
				t.Errorf("%s title %q", p.Notice.Kind, p.Notice.Title)
			}
		}
	}
}

func TestPlanBootSpanish(t *testing.T) {
	got := PlanBoot(BootInput{Switches: wallsOn, Entries: []Entry{walled, mine}, Lang: decide.LangES})
	if len(got) != 2 {
		t.Fatalf("planned %+v", got)
	}
	if got[0].Notice.Title != decide.Text(decide.TitleWallsNowOn, decide.LangES) || got[0].Notice.Lang != "es" ||
		!strings.Contains(got[0].Notice.Body, "- notes: red: ninguna;") {
		t.Fatalf("walls-now-on in Spanish: %+v", got[0].Notice)
	}
	if !strings.Contains(got[1].Notice.Body, "- kb: sin muro (lo elegiste tú)") {
		t.Fatalf("per-boot in Spanish: %+v", got[1].Notice)
	}
}

func TestPlanSettingsChanged(t *testing.T) {
	for _, sw := range []decide.Switches{wallsOn, killed, killedHD} {
		got := PlanSettingsChanged(sw, decide.LangEN)
		if len(got) != 1 || got[0].Notice.Kind != KindSettingsChanged || got[0].Marker != MarkerNone ||
			got[0].Notice.Title != "Add-on wall settings were changed outside Crow" ||
			!strings.Contains(got[0].Notice.Body, "take effect at the next connect") {
			t.Fatalf("PlanSettingsChanged(%+v) = %+v", sw, got)
		}
	}
	if got := PlanSettingsChanged(wallsOff, decide.LangEN); got != nil {
		t.Fatalf("walls off sent %+v", got)
	}
}

// An id or name from a file cannot add lines, colours, links or markup to
// a note: it comes out as visible escapes.
func TestPlanBootTextFromFilesIsInert(t *testing.T) {
	evil := Entry{
		ID:     "x\n- notes: walled\x1b[2J",
		Name:   "<img src=x onerror=alert(1)>\u202e",
		Mode:   "NotWalled",
		Reason: "OwnerChoice",
		Reach:  decide.ReachFacts{Hosts: []string{"A\r\nB"}},
	}
	evilWalled := evil
	evilWalled.Mode, evilWalled.Reason = "Walled", "Walled"
	for _, in := range []BootInput{
		{Switches: wallsOn, Entries: []Entry{evil}, Announced: Announced{WallsOn: true}},
		{Switches: wallsOn, Entries: []Entry{evilWalled}},
		{Switches: killed, Entries: []Entry{evil}},
	} {
		got := PlanBoot(in)
		if len(got) != 1 {
			t.Fatalf("planned %+v", got)
		}
		n := got[0].Notice
		if lines := strings.Count(n.Body, "\n"); lines != 2 {
			t.Errorf("%s body has %d line breaks, want 2:\n%s", n.Kind, lines, n.Body)
		}
		for _, bad := range []string{"\x1b", "<img", "\u202e", "\r"} {
			if strings.Contains(n.Body, bad) {
				t.Errorf("%s body carries %q: %q", n.Kind, bad, n.Body)
			}
		}
		// Positive control: the name and id are there, escaped.
		if !strings.Contains(n.Body, `&lt;img src=x onerror=alert(1)&gt;\u202e (x\n- notes: walled\x1b[2J)`) {
			t.Errorf("%s body lacks the escaped label: %q", n.Kind, n.Body)
		}
		if err := check(n); err != nil {
			t.Errorf("planned note fails its own check: %v", err)
		}
	}
}

func TestPlanBootDoesNotReorderCallersSlice(t *testing.T) {
	es := []Entry{mine, backend, walled}
	PlanBoot(BootInput{Switches: wallsOn, Entries: es})
	if es[0].ID != "kb" || es[1].ID != "pg-backend" || es[2].ID != "notes" {
		t.Fatalf("caller's entries were reordered: %v", es)
	}
}
