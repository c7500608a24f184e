package notice

import (
	"slices"
	"strings"

	v1alpha1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/decide"
)

// Entry is one add-on or approved backend as decided at this boot.
type Entry struct {
	// ID is the add-on's id; Name its display name, if it has one.
	ID   string
	Name string
	// Mode and Reason are its decided mode and api reason.
	Mode   v1alpha1.Mode
	Reason string
	// Reach is what its wall hands it.
	Reach decide.ReachFacts
}

// Announced holds which once-only notes addon-walls.json records as sent.
type Announced struct {
	WallsOn    bool
	KillSwitch bool
}

// BootInput is what the boot plan reads.
type BootInput struct {
	Switches  decide.Switches
	Entries   []Entry
	Announced Announced
	Lang      decide.Lang
}

// PlanBoot decides which notes go out at this boot:
//
//   - walls off and no kill switch: nothing — an install that has not
//     switched walls on sees no new bell;
//   - the kill switch set, on a computer that has never announced walls or
//     the kill switch: one kill-switch note, instead of the per-boot note,
//     with its marker;
//   - otherwise with the kill switch set: the per-boot note;
//   - walls on: "Add-ons now run inside walls on this computer" once, on the
//     first boot where at least one add-on really runs in a wall, with its
//     marker; and the per-boot note when at least one add-on or approved
//     backend is not walled.
//
// Add-ons that are off and http add-ons (no process here) are in neither
// list. Entries are listed by id, so the same state gives the same note.
func PlanBoot(in BootInput) []Planned {
	sw := in.Switches
	if !sw.KillSwitch && !sw.WallsOn() {
		return nil
	}
	entries := slices.Clone(in.Entries)
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.ID, b.ID) })
	var notWalled, inWall []Entry
	for _, e := range entries {
		switch {
		case runsInWall(e):
			inWall = append(inWall, e)
			if e.Mode == v1alpha1.ModeNotWalled {
				notWalled = append(notWalled, e)
			}
		case e.Mode == v1alpha1.ModeNotWalled && e.Reason != v1alpha1.ReasonHTTPAddon:
			notWalled = append(notWalled, e)
		}
	}
	l := in.Lang
	if sw.KillSwitch {
		if !in.Announced.KillSwitch && !in.Announced.WallsOn {
			return []Planned{{Notice: killSwitchNote(notWalled, l), Marker: MarkerKillSwitch}}
		}
		return []Planned{{Notice: someNotWalledNote(notWalled, true, l)}}
	}
	var out []Planned
	if !in.Announced.WallsOn && len(inWall) > 0 {
		out = append(out, Planned{Notice: wallsNowOnNote(inWall, l), Marker: MarkerWallsOn})
	}
	if len(notWalled) > 0 {
		out = append(out, Planned{Notice: someNotWalledNote(notWalled, false, l)})
	}
	return out
}

// PlanSettingsChanged is the note for a change to addon-walls.json that
// Crow did not write. Like every note, it is not sent on an install with
// walls off and no kill switch.
func PlanSettingsChanged(sw decide.Switches, lang decide.Lang) []Planned {
	if !sw.KillSwitch && !sw.WallsOn() {
		return nil
	}
	return []Planned{{Notice: note(KindSettingsChanged, decide.TitleSettingsChanged, lang,
		decide.Text(decide.LineSettingsChanged, lang))}}
}

// runsInWall is true for an add-on whose process runs inside bubblewrap:
// walled ones, and the crow.db and storage readers whose wall keeps a
// residual open.
func runsInWall(e Entry) bool {
	switch {
	case e.Mode == v1alpha1.ModeWalled:
		return true
	case e.Mode == v1alpha1.ModeNotWalled:
		return e.Reason == v1alpha1.ReasonSharesCrowDatabase || e.Reason == v1alpha1.ReasonUsesAllStorage
	}
	return false
}

func someNotWalledNote(es []Entry, killSwitch bool, l decide.Lang) Notice {
	lines := []string{decide.Text(decide.LineNotWalledIntro, l)}
	lines = append(lines, wordLines(es, l)...)
	if killSwitch {
		lines = append(lines, decide.Text(decide.LineKillSwitchSet, l))
	} else {
		lines = append(lines, decide.Text(decide.LineKillSwitchNotSet, l))
	}
	return note(KindSomeNotWalled, decide.TitleSomeNotWalled, l, lines...)
}

func killSwitchNote(es []Entry, l decide.Lang) Notice {
	lines := []string{decide.Text(decide.LineKillSwitchIntro, l)}
	lines = append(lines, wordLines(es, l)...)
	lines = append(lines, decide.Text(decide.LineKillSwitchSet, l))
	return note(KindKillSwitch, decide.TitleKillSwitch, l, lines...)
}

func wallsNowOnNote(es []Entry, l decide.Lang) Notice {
	lines := []string{decide.Text(decide.LineWallsNowOnIntro, l)}
	for _, e := range es {
		lines = append(lines, "- "+label(e)+": "+decide.Reach(e.Reach, l))
	}
	lines = append(lines, decide.Text(decide.LineNotCovered, l))
	return note(KindWallsNowOn, decide.TitleWallsNowOn, l, lines...)
}

func wordLines(es []Entry, l decide.Lang) []string {
	if len(es) == 0 {
		return []string{decide.Text(decide.LineNoAddons, l)}
	}
	var lines []string
	for _, e := range es {
		w := decide.Word(e.Reason, l)
		if w == "" {
			// A reason with no word is shown as itself, inert, rather than
			// dropping the add-on from a note about what is not walled.
			w = decide.Inert(e.Reason)
		}
		lines = append(lines, "- "+label(e)+": "+w)
	}
	return lines
}

// label names an entry with text from files made inert.
func label(e Entry) string {
	if e.Name == "" || e.Name == e.ID {
		return decide.Inert(e.ID)
	}
	return decide.Inert(e.Name) + " (" + decide.Inert(e.ID) + ")"
}

func note(k Kind, title decide.Key, l decide.Lang, lines ...string) Notice {
	lang := l
	if lang != decide.LangES {
		lang = decide.LangEN
	}
	return Notice{Kind: k, Title: decide.Text(title, l), Body: strings.Join(lines, "\n"), Lang: string(lang)}
}
