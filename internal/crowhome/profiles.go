package crowhome

import "path/filepath"

// AddonProfile is one add-on's line in the checkout's
// registry/addon-profiles.json, generated from the bundle's server code.
type AddonProfile struct {
	// CrowDb is true when the add-on's server code opens crow.db.
	CrowDb bool
	// Storage is true when it holds the root object-storage credentials.
	Storage bool
	// FirstParty is true for Crow's own add-ons.
	FirstParty bool
}

// ProfilesPath is <checkout>/registry/addon-profiles.json.
func ProfilesPath(checkout string) string {
	return filepath.Join(checkout, "registry", "addon-profiles.json")
}

// ReadProfiles reads registry/addon-profiles.json strictly: every key an
// add-on id, every entry exactly {crowDb, storage, firstParty}, all three
// present. The file is generated, so anything else means it is not the
// file the generator wrote, and none of it is used.
func ReadProfiles(file string) (map[string]AddonProfile, error) {
	data, err := readRegular(file, false)
	if err != nil {
		return nil, err
	}
	return parseProfiles(file, data)
}

func parseProfiles(file string, data []byte) (map[string]AddonProfile, error) {
	root, err := decodeStrict(file, data, func(parent path) bool { return parent.depth() == 0 })
	if err != nil {
		return nil, err
	}
	if err := wantKind(file, root, nil, kindObject); err != nil {
		return nil, err
	}
	out := make(map[string]AddonProfile, len(root.members))
	for _, mem := range root.members {
		if err := ValidID(mem.key); err != nil {
			return nil, fileErr(file, mem.at, "%s", err.Error())
		}
		f, err := objectFields(file, mem.val, mem.at, true, "crowDb", "storage", "firstParty")
		if err != nil {
			return nil, err
		}
		var p AddonProfile
		if p.CrowDb, err = f.requiredBool("crowDb"); err != nil {
			return nil, err
		}
		if p.Storage, err = f.requiredBool("storage"); err != nil {
			return nil, err
		}
		if p.FirstParty, err = f.requiredBool("firstParty"); err != nil {
			return nil, err
		}
		out[mem.key] = p
	}
	return out, nil
}
