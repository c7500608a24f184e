package decide

import v1alpha1 "github.com/addonwall/addonwall/api/v1alpha1"

// The two host switches. They are read from the controller's own
// environment and from nowhere else: the same keys in a bundle .env, in an
// mcp-addons.json entry or in a child's environment are not switches, so
// nothing an add-on can write can switch its own wall off.
const (
	// KillSwitchEnv turns every wall off when it is exactly "off".
	KillSwitchEnv = "CROW_ADDON_WALLS"
	// HostDefaultEnv is the per-host default, "walled" or "off".
	HostDefaultEnv = "CROW_ADDON_WALLS_DEFAULT"
)

// HostDefault is the per-host default as it reads after the code default
// was applied: walled or off.
type HostDefault string

// Per-host defaults.
const (
	HostWalled HostDefault = "walled"
	HostOff    HostDefault = "off"
)

// CodeDefault is this release's per-host default: merging the wall code
// walls nothing until an operator sets walled for a host.
const CodeDefault = HostOff

// Switches are the host switches as read.
type Switches struct {
	// KillSwitch is true only when CROW_ADDON_WALLS is exactly "off".
	KillSwitch bool
	// KillSwitchIgnored is true when CROW_ADDON_WALLS held some other
	// non-empty value ("OFF", " off", "0"). Such a value does not switch
	// walls off; it is reported so the operator sees the setting missed.
	KillSwitchIgnored bool
	// HostDefault is walled or off; anything but an exact "walled" or
	// "off" reads as CodeDefault.
	HostDefault HostDefault
	// HostDefaultIgnored is true when CROW_ADDON_WALLS_DEFAULT held a
	// non-empty value other than "walled" or "off" ("Walled ", a typo).
	// Unset and empty are not flagged: there is no value to ignore.
	HostDefaultIgnored bool
}

// ReadSwitches reads the two switches through getenv, which callers pass
// as os.Getenv for the controller's own environment (tests pass a map).
// It asks for the two keys and nothing else. Matching is exact and
// case-sensitive on purpose: the seed names the values "off" and "walled",
// and a near miss that quietly counted would make "CROW_ADDON_WALLS_DEFAULT=
// Walled " wall a host the operator never finished switching. A nil getenv
// reads as an empty environment.
func ReadSwitches(getenv func(string) string) Switches {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var s Switches
	switch v := getenv(KillSwitchEnv); v {
	case "off":
		s.KillSwitch = true
	case "":
	default:
		s.KillSwitchIgnored = true
	}
	switch v := getenv(HostDefaultEnv); v {
	case string(HostWalled):
		s.HostDefault = HostWalled
	case string(HostOff):
		s.HostDefault = HostOff
	case "":
		s.HostDefault = CodeDefault
	default:
		s.HostDefault = CodeDefault
		s.HostDefaultIgnored = true
	}
	return s
}

// WallsOn is the effective answer for this host: true when walls run here
// unless an add-on's own facts say otherwise. A HostDefault that is neither
// walled nor off (a Switches not made by ReadSwitches) reads as off.
func (s Switches) WallsOn() bool {
	return !s.KillSwitch && s.HostDefault == HostWalled
}

// Status is the switches as the WallHost status records them.
func (s Switches) Status() v1alpha1.Switches {
	hd := s.HostDefault
	if hd != HostWalled {
		hd = HostOff
	}
	eff := string(HostOff)
	if s.WallsOn() {
		eff = string(HostWalled)
	}
	return v1alpha1.Switches{
		KillSwitch:         s.KillSwitch,
		HostDefault:        string(hd),
		HostDefaultIgnored: s.HostDefaultIgnored,
		Effective:          eff,
	}
}
