package session

import (
	"strings"
	"testing"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
)

// TestDoorSet: a door set comes only from the core table, only for the
// add-on's own id and only for a first-party add-on (DOOR-06); every
// refusal is reported, beside the control that gets its set.
func TestDoorSet(t *testing.T) {
	wall := func(id, doors string, firstParty bool) *wallsv1.AddonWall {
		w := &wallsv1.AddonWall{}
		w.Name, w.Spec.Profile.Doors, w.Spec.FirstParty = id, doors, firstParty
		return w
	}
	cases := []struct {
		name      string
		w         *wallsv1.AddonWall
		wantDoors int
		dropped   string
	}{
		{"first-party, its own set", wall("kiosk", "kiosk", true), 2, ""},
		{"no doors asked", wall("kiosk", "", true), 0, ""},
		{"third-party naming a first-party set", wall("kiosk", "kiosk", false), 0, "first-party add-ons only"},
		{"another id's set", wall("studio", "kiosk", true), 0, "its own id's door set"},
		{"its own id with no core set", wall("notes", "notes", true), 0, "no door set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set, dropped := doorSet(c.w)
			if len(set.Doors()) != c.wantDoors {
				t.Errorf("doors = %v, want %d", set.Doors(), c.wantDoors)
			}
			if got := strings.Join(dropped, "\n"); (c.dropped == "") != (got == "") || !strings.Contains(got, c.dropped) {
				t.Errorf("dropped = %q, want it to say %q", got, c.dropped)
			}
		})
	}
}

func TestGatewayPort(t *testing.T) {
	for v, want := range map[string]int{"": 3001, "3004": 3004, "65535": 65535} {
		p := &WallPreparer{Environ: map[string]string{"CROW_GATEWAY_PORT": v}}
		if got, err := p.gatewayPort(); err != nil || got != want {
			t.Errorf("CROW_GATEWAY_PORT=%q: %d %v, want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"0", "65536", "30O1", "-1", " 3001"} {
		p := &WallPreparer{Environ: map[string]string{"CROW_GATEWAY_PORT": v}}
		if got, err := p.gatewayPort(); err == nil {
			t.Errorf("CROW_GATEWAY_PORT=%q: %d, want an error", v, got)
		}
	}
}
