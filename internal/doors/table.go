// Package doors is how a few first-party add-ons ask the gateway for what
// only it can do: Crow's core table of door sets, the per-spawn door
// tokens, the strict raw-bytes rules a door request must pass, and a small
// server that serves exactly one checked request per connection.
//
// A token is honoured in one place only: the door socket of its own
// spawn, in that spawn's 0700 relay folder, which the wall reaches through
// its entry and nothing else on the host can enter. The gateway never sees
// a token (the door server drops the field before the request goes on),
// so a token copied out of a wall and presented at the gateway's port
// directly is nothing to it (DOOR-07): a host process that can reach that
// port gains nothing from the token.
package doors

import (
	"errors"
	"fmt"
	"slices"
)

// Door is one method and exact path of the gateway.
type Door struct {
	Method string
	Path   string
}

func (d Door) String() string { return d.Method + " " + d.Path }

// Set is an add-on's door set, from the core table only. The zero Set has
// no doors.
type Set struct {
	id    string
	doors []Door
}

// ID is the add-on id the set belongs to ("" for the zero Set).
func (s Set) ID() string { return s.id }

// Empty reports whether the set has no doors.
func (s Set) Empty() bool { return len(s.doors) == 0 }

// Doors returns a copy of the set's doors.
func (s Set) Doors() []Door { return slices.Clone(s.doors) }

// Has reports whether method and path are exactly one of the set's doors
// (byte for byte: no case folding, no path cleaning).
func (s Set) Has(method, path string) bool {
	return slices.Contains(s.doors, Door{method, path})
}

// coreTable is our stand-in for Crow's core ADDON_DOORS table, which is
// not public: the seed's three examples (the kiosk display state, Studio's
// song hub, the browser container's restart) under paths we chose. It is
// compiled in; no manifest, file or resource can add to it.
var coreTable = map[string][]Door{
	"kiosk": {
		{"GET", "/kiosk/display-state"},
		{"PUT", "/kiosk/display-state"},
	},
	"studio": {
		{"GET", "/studio/song-hub"},
		{"POST", "/studio/song-hub"},
	},
	"browser": {
		{"POST", "/browser/restart"},
	},
}

// Core returns the core table's set for id.
func Core(id string) (Set, bool) {
	d, ok := coreTable[id]
	if !ok {
		return Set{}, false
	}
	return Set{id: id, doors: slices.Clone(d)}, true
}

// Errors Allowed returns; test with errors.Is.
var (
	// ErrThirdParty: doors are for first-party add-ons only.
	ErrThirdParty = errors.New("doors are for first-party add-ons only")
	// ErrNotOwnID: a manifest may only name its own id's door set.
	ErrNotOwnID = errors.New("a manifest may only name its own id's door set")
)

// Allowed decides the door set a manifest's "doors" value gives add-on
// addonID. An empty value gives no set. A value that is not the add-on's
// own id, or any value from a third-party add-on, is refused with an
// error (the add-on then gets no door listener and no token). Its own id
// with no entry in the core table gives no set: a manifest can name a
// set, never make one.
func Allowed(manifestDoors, addonID string, firstParty bool) (Set, error) {
	if manifestDoors == "" {
		return Set{}, nil
	}
	if !firstParty {
		return Set{}, fmt.Errorf("the manifest of %q names the door set %q: %w", addonID, manifestDoors, ErrThirdParty)
	}
	if manifestDoors != addonID {
		return Set{}, fmt.Errorf("the manifest of %q names the door set %q: %w", addonID, manifestDoors, ErrNotOwnID)
	}
	s, _ := Core(addonID)
	return s, nil
}
