package doors

import (
	"errors"
	"testing"
)

// DOOR-06: door set ownership is decided from the manifest's value, the
// add-on's id and whether it is first-party; the sets come from the core
// table only.
func TestAllowed(t *testing.T) {
	cases := []struct {
		name          string
		doors, id     string
		firstParty    bool
		wantErr       error
		wantDoors     bool
		wantSetFromID string
	}{
		{"positive control: first-party names its own set", "kiosk", "kiosk", true, nil, true, "kiosk"},
		{"positive control: no doors asked", "", "kiosk", true, nil, false, ""},
		{"no doors asked, third party", "", "some-addon", false, nil, false, ""},
		{"another id's set", "browser", "kiosk", true, ErrNotOwnID, false, ""},
		{"third party names a first-party set", "kiosk", "evil", false, ErrThirdParty, false, ""},
		{"third party names its own id", "evil", "evil", false, ErrThirdParty, false, ""},
		{"third party that copied a first-party id", "kiosk", "kiosk", false, ErrThirdParty, false, ""},
		{"own id with no core set: no set, never a new one", "funkwhale", "funkwhale", true, nil, false, ""},
		{"case variant of another id", "Kiosk", "kiosk", true, ErrNotOwnID, false, ""},
	}
	for _, tc := range cases {
		set, err := Allowed(tc.doors, tc.id, tc.firstParty)
		if !errors.Is(err, tc.wantErr) || (err != nil) != (tc.wantErr != nil) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.wantErr)
		}
		if set.Empty() == tc.wantDoors {
			t.Errorf("%s: set %v, want doors: %v", tc.name, set.Doors(), tc.wantDoors)
		}
		if set.ID() != tc.wantSetFromID {
			t.Errorf("%s: set id %q, want %q", tc.name, set.ID(), tc.wantSetFromID)
		}
	}
}

func TestCoreSetsAreCopies(t *testing.T) {
	s, ok := Core("kiosk")
	if !ok || !s.Has("GET", "/kiosk/display-state") {
		t.Fatalf("positive control: kiosk set %v", s.Doors())
	}
	d := s.Doors()
	d[0] = Door{"GET", "/admin"}
	again, _ := Core("kiosk")
	if again.Has("GET", "/admin") || s.Has("GET", "/admin") {
		t.Fatal("a caller changed the core table through a copy")
	}
	for id := range coreTable {
		s, _ := Core(id)
		for _, d := range s.Doors() {
			if !TargetOK(d.Path) {
				t.Errorf("core door %s of %s fails the target rules", d, id)
			}
		}
	}
}
