package decide

import (
	"slices"
	"testing"

	v1alpha1 "github.com/addonwall/addonwall/api/v1alpha1"
)

func TestReadSwitches(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want Switches
		eff  string
	}{
		{"no env reads the code default", nil,
			Switches{HostDefault: HostOff}, "off"},
		{"default walled", map[string]string{HostDefaultEnv: "walled"},
			Switches{HostDefault: HostWalled}, "walled"},
		{"default off", map[string]string{HostDefaultEnv: "off"},
			Switches{HostDefault: HostOff}, "off"},
		{"empty default is unset, not ignored", map[string]string{HostDefaultEnv: ""},
			Switches{HostDefault: HostOff}, "off"},
		{"capitalised and trailing space is ignored", map[string]string{HostDefaultEnv: "Walled "},
			Switches{HostDefault: HostOff, HostDefaultIgnored: true}, "off"},
		{"typo is ignored", map[string]string{HostDefaultEnv: "waled"},
			Switches{HostDefault: HostOff, HostDefaultIgnored: true}, "off"},
		{"WALLED is ignored", map[string]string{HostDefaultEnv: "WALLED"},
			Switches{HostDefault: HostOff, HostDefaultIgnored: true}, "off"},
		{"kill switch", map[string]string{KillSwitchEnv: "off"},
			Switches{KillSwitch: true, HostDefault: HostOff}, "off"},
		{"kill switch beats walled default", map[string]string{KillSwitchEnv: "off", HostDefaultEnv: "walled"},
			Switches{KillSwitch: true, HostDefault: HostWalled}, "off"},
		{"OFF is not the kill switch, and is reported", map[string]string{KillSwitchEnv: "OFF", HostDefaultEnv: "walled"},
			Switches{KillSwitchIgnored: true, HostDefault: HostWalled}, "walled"},
		{"padded off is not the kill switch", map[string]string{KillSwitchEnv: " off", HostDefaultEnv: "walled"},
			Switches{KillSwitchIgnored: true, HostDefault: HostWalled}, "walled"},
		{"on is not a value of the kill switch", map[string]string{KillSwitchEnv: "on"},
			Switches{KillSwitchIgnored: true, HostDefault: HostOff}, "off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ReadSwitches(func(k string) string { return tt.env[k] })
			if got != tt.want {
				t.Fatalf("ReadSwitches(%v) = %+v, want %+v", tt.env, got, tt.want)
			}
			st := got.Status()
			if st.Effective != tt.eff {
				t.Fatalf("Effective = %q, want %q", st.Effective, tt.eff)
			}
			if st.KillSwitch != tt.want.KillSwitch || st.HostDefault != string(tt.want.HostDefault) || st.HostDefaultIgnored != tt.want.HostDefaultIgnored {
				t.Fatalf("Status() = %+v does not mirror %+v", st, got)
			}
		})
	}
}

// The switches are asked for by exactly two names: an add-on's .env, its
// mcp-addons.json env or a child environment holding the same keys reach
// this function only if the caller passes them, and the controller passes
// os.Getenv of its own process.
func TestReadSwitchesAsksOnlyForTheTwoKeys(t *testing.T) {
	var asked []string
	ReadSwitches(func(k string) string { asked = append(asked, k); return "" })
	slices.Sort(asked)
	want := []string{KillSwitchEnv, HostDefaultEnv}
	slices.Sort(want)
	if !slices.Equal(asked, want) {
		t.Fatalf("asked for %v, want exactly %v", asked, want)
	}
}

func TestReadSwitchesNilGetenv(t *testing.T) {
	if got := ReadSwitches(nil); got != (Switches{HostDefault: HostOff}) {
		t.Fatalf("ReadSwitches(nil) = %+v, want the code default", got)
	}
}

func TestStatusOfHandMadeSwitches(t *testing.T) {
	// A Switches not made by ReadSwitches with a stray default reads as off.
	got := Switches{HostDefault: "sometimes"}.Status()
	want := v1alpha1.Switches{HostDefault: "off", Effective: "off"}
	if got != want {
		t.Fatalf("Status() = %+v, want %+v", got, want)
	}
	if (Switches{HostDefault: "sometimes"}).WallsOn() {
		t.Fatal("a stray host default must not turn walls on")
	}
}
