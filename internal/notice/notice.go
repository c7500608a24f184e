// Package notice plans the bell notes about walls and delivers them: into
// Crow's own notifications table when crow.db is there, otherwise to a
// notices file in the Crow home. Planning is pure; delivery reports every
// failure, so a once-per-computer marker is set only after a note went out.
package notice

import (
	"time"
)

// Kind says which note a Notice is.
type Kind string

// Kinds.
const (
	// KindSomeNotWalled is the per-boot "Some add-ons are not walled".
	KindSomeNotWalled Kind = "someNotWalled"
	// KindWallsNowOn is the once-per-computer "Add-ons now run inside walls
	// on this computer".
	KindWallsNowOn Kind = "wallsNowOn"
	// KindKillSwitch is the one note a host switched off by the kill switch
	// gets on the first boot of a build that carries walls.
	KindKillSwitch Kind = "killSwitch"
	// KindSettingsChanged is "Add-on wall settings were changed outside Crow".
	KindSettingsChanged Kind = "settingsChanged"
)

var kinds = []Kind{KindSomeNotWalled, KindWallsNowOn, KindKillSwitch, KindSettingsChanged}

// Notice is one note. Its title and body are complete, inert text: every
// piece of it that came from a file was passed through decide.Inert.
type Notice struct {
	// Time is when it was delivered (UTC); Deliver stamps a zero Time.
	Time time.Time `json:"time"`
	// Kind says which note it is.
	Kind Kind `json:"kind"`
	// Title is the bell's headline.
	Title string `json:"title"`
	// Body is one line per entry, separated by "\n".
	Body string `json:"body"`
	// Lang is the language it is written in ("en", "es").
	Lang string `json:"lang,omitempty"`
}

// Marker names a once-only marker in addon-walls.json's "announced" object.
type Marker string

// Markers.
const (
	MarkerNone       Marker = ""
	MarkerWallsOn    Marker = "wallsOn"
	MarkerKillSwitch Marker = "killSwitch"
)

// Planned is a note to send and the marker to set once, and only once, it
// has been delivered. A failed delivery leaves the marker unset, so the
// note is planned again at the next boot.
type Planned struct {
	Notice Notice
	Marker Marker
}
