package crowhome

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"
)

// WallsFileName is the owner's wall settings inside CROW_HOME.
const WallsFileName = "addon-walls.json"

// wallsVersion is the only format version this package reads or writes.
const wallsVersion = 1

// Choice is the owner's per-add-on choice.
type Choice string

// The two choices an owner can make. No entry means no choice.
const (
	ChoiceWalled    Choice = "walled"
	ChoiceNotWalled Choice = "notWalled"
)

// Announcement names a once-per-computer notice whose marker lives in
// addon-walls.json.
type Announcement string

// The markers.
const (
	// AnnounceWallsOn: "Add-ons now run inside walls on this computer".
	AnnounceWallsOn Announcement = "wallsOn"
	// AnnounceKillSwitch: the notice for a host switched off by the kill switch.
	AnnounceKillSwitch Announcement = "killSwitch"
)

// AddonChoice is one add-on's line in addon-walls.json.
type AddonChoice struct {
	Choice    Choice
	ChangedAt time.Time
}

// Walls is the content of addon-walls.json.
type Walls struct {
	// Addons are the owner's choices by add-on id.
	Addons map[string]AddonChoice
	// Announced holds when each once-per-computer notice went out; a
	// missing key means it has not.
	Announced map[Announcement]time.Time
	// SHA256 is the hex sha256 of the bytes read, "" when there was no file.
	// Compare it with what SetChoice and MarkAnnounced returned to tell the
	// controller's own writes from an edit made outside it.
	SHA256 string
}

// WallsPath is <CROW_HOME>/addon-walls.json.
func WallsPath(crowHome string) string { return filepath.Join(crowHome, WallsFileName) }

// ReadWalls reads addon-walls.json strictly. A missing file is the empty,
// valid state (no choices, nothing announced). A symlink at the path is an
// error: the file has one writer, and it never writes through a link.
func ReadWalls(file string) (*Walls, error) {
	data, err := readRegular(file, true)
	if errors.Is(err, fs.ErrNotExist) {
		return emptyWalls(), nil
	}
	if err != nil {
		return nil, err
	}
	return parseWalls(file, data)
}

func emptyWalls() *Walls {
	return &Walls{Addons: map[string]AddonChoice{}, Announced: map[Announcement]time.Time{}}
}

func wallsMapKeys(parent path) bool {
	return parent.depth() == 1 && parent.s.kind == segField && parent.s.key == "addons"
}

func parseWalls(file string, data []byte) (*Walls, error) {
	root, err := decodeStrict(file, data, wallsMapKeys)
	if err != nil {
		return nil, err
	}
	f, err := objectFields(file, root, nil, true, "version", "addons", "announced")
	if err != nil {
		return nil, err
	}
	vn, vat, err := f.required("version")
	if err != nil {
		return nil, err
	}
	if err := wantKind(file, vn, vat, kindNumber); err != nil {
		return nil, err
	}
	if v, err := strconv.ParseInt(vn.text, 10, 32); err != nil || v != wallsVersion {
		return nil, fileErr(file, vat, "is not %d, the only version this build reads", wallsVersion)
	}
	w := emptyWalls()
	w.SHA256 = sha256Hex(data)
	if an, aat := f.get("addons"); an != nil {
		if err := wantKind(file, an, aat, kindObject); err != nil {
			return nil, err
		}
		for _, mem := range an.members {
			if err := ValidID(mem.key); err != nil {
				return nil, fileErr(file, mem.at, "%s", err.Error())
			}
			c, err := decodeAddonChoice(file, mem.val, mem.at)
			if err != nil {
				return nil, err
			}
			w.Addons[mem.key] = c
		}
	}
	if nn, nat := f.get("announced"); nn != nil {
		af, err := objectFields(file, nn, nat, true, string(AnnounceWallsOn), string(AnnounceKillSwitch))
		if err != nil {
			return nil, err
		}
		for _, key := range []Announcement{AnnounceWallsOn, AnnounceKillSwitch} {
			tn, tat := af.get(string(key))
			if tn == nil {
				continue
			}
			t, err := timeValue(file, tn, tat)
			if err != nil {
				return nil, err
			}
			w.Announced[key] = t
		}
	}
	return w, nil
}

func decodeAddonChoice(file string, n *node, at path) (AddonChoice, error) {
	var c AddonChoice
	f, err := objectFields(file, n, at, true, "choice", "changedAt")
	if err != nil {
		return c, err
	}
	cn, cat, err := f.required("choice")
	if err != nil {
		return c, err
	}
	s, err := stringValue(file, cn, cat, 16)
	if err != nil {
		return c, err
	}
	if c.Choice = Choice(s); !c.Choice.valid() {
		return c, fileErr(file, cat, "must be \"walled\" or \"notWalled\"")
	}
	tn, tat, err := f.required("changedAt")
	if err != nil {
		return c, err
	}
	if c.ChangedAt, err = timeValue(file, tn, tat); err != nil {
		return c, err
	}
	return c, nil
}

func timeValue(file string, n *node, at path) (time.Time, error) {
	s, err := stringValue(file, n, at, 64)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fileErr(file, at, "must be an RFC 3339 time such as 2026-01-02T15:04:05Z")
	}
	return t, nil
}

func (c Choice) valid() bool { return c == ChoiceWalled || c == ChoiceNotWalled }

func (a Announcement) valid() bool { return a == AnnounceWallsOn || a == AnnounceKillSwitch }
