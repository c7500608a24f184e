package crowhome

import (
	"path/filepath"
	"strconv"
)

// ManifestFileName is a bundle's manifest inside its folder.
const ManifestFileName = "manifest.json"

// Limits on the parts of a manifest this package reads.
const (
	maxEnvVarsDeclared = 256
	maxSandboxFields   = 64
	maxPorts           = 256
	maxNameLen         = 256
)

// Manifest is the part of a bundle's manifest.json the walls use. Crow's
// own fields are read leniently (Crow adds fields; unknown ones are
// skipped), the sandbox section strictly.
type Manifest struct {
	// ID is the bundle's id; ReadManifest checks it is the one asked for.
	ID string
	// Name is the display name.
	Name string
	// Server is how Crow starts the add-on; nil for a bundle with no MCP server.
	Server *ManifestServer
	// EnvVars are the environment fields the bundle declares.
	EnvVars []EnvVar
	// ComposeFile is docker.composefile: a path inside the bundle folder,
	// empty when the manifest names none.
	ComposeFile string
	// Port and Ports are the ports the manifest claims (0 / nil when none).
	Port  int
	Ports []int
	// Sandbox is the manifest's sandbox section.
	Sandbox Sandbox
}

// ManifestServer is manifest.server.
type ManifestServer struct {
	Command string
	Args    []string
	// EnvKeys are the environment fields the install copies into the entry.
	EnvKeys []string
}

// EnvVar is one element of manifest.env_vars.
type EnvVar struct {
	Name string
	// Default is the manifest's default. A number or boolean default is
	// kept as its JSON text (8600, true), as Crow's install writes it into
	// the environment. Defaults are public manifest text, not secrets.
	Default string
	// HasDefault tells an empty default from none.
	HasDefault bool
	Secret     bool
	Required   bool
}

// Sandbox is the manifest's sandbox section (DESIGN.md §9).
type Sandbox struct {
	// Declared is true when the manifest has a sandbox section or a
	// top-level network.
	Declared bool
	// Network is what the add-on may reach; the zero value is "none".
	Network Network
	// Files names the environment fields whose owner-typed values are paths.
	Files Files
	// OwnEnvFile binds <install folder>/.env read-only.
	OwnEnvFile bool
	// Doors is the door set the manifest asks for (an add-on id); whether
	// it may have it is the doors rule's to decide.
	Doors string
}

// Network is sandbox.network. "none" and a missing network are the zero
// value; "internet" is Internet: true.
type Network struct {
	Internet bool
	// Hosts are environment field names; each field's value is one exact
	// host:port.
	Hosts []string
}

// Files is sandbox.files: environment field names, not paths.
type Files struct {
	Read     []string
	Write    []string
	OAuthDir string
}

// ManifestPath is <CROW_HOME>/bundles/<id>/manifest.json.
func ManifestPath(crowHome, id string) string {
	return filepath.Join(crowHome, "bundles", id, ManifestFileName)
}

// ComposePath is the add-on's compose file: docker.composefile inside the
// install folder, or docker-compose.yml when the manifest names none.
func (m *Manifest) ComposePath(installDir string) string {
	if m != nil && m.ComposeFile != "" {
		return filepath.Join(installDir, m.ComposeFile)
	}
	return filepath.Join(installDir, "docker-compose.yml")
}

// ReadManifest reads a bundle manifest and checks that its id is wantID
// (an installed folder claiming another add-on's id is refused, so it can
// never borrow that add-on's policy).
func ReadManifest(file, wantID string) (*Manifest, error) {
	data, err := readRegular(file, false)
	if err != nil {
		return nil, err
	}
	m, err := parseManifest(file, data)
	if err != nil {
		return nil, err
	}
	if m.ID != wantID {
		return nil, fileErr(file, path(nil).field("id"), "is not %s, the add-on this manifest was read for", quoteShort(wantID))
	}
	return m, nil
}

var manifestKeys = []string{"id", "name", "server", "env_vars", "docker", "port", "ports", "sandbox", "network"}

func parseManifest(file string, data []byte) (*Manifest, error) {
	root, err := decodeStrict(file, data, nil)
	if err != nil {
		return nil, err
	}
	f, err := objectFields(file, root, nil, false, manifestKeys...)
	if err != nil {
		return nil, err
	}
	m := &Manifest{}
	idNode, idAt, err := f.required("id")
	if err != nil {
		return nil, err
	}
	if m.ID, err = stringValue(file, idNode, idAt, 64); err != nil {
		return nil, err
	}
	if err := ValidID(m.ID); err != nil {
		return nil, fileErr(file, idAt, "%s", err.Error())
	}
	if m.Name, err = f.str("name", maxNameLen); err != nil {
		return nil, err
	}
	if m.Server, err = decodeServer(f); err != nil {
		return nil, err
	}
	if m.EnvVars, err = decodeEnvVars(f); err != nil {
		return nil, err
	}
	if m.ComposeFile, err = decodeDocker(f); err != nil {
		return nil, err
	}
	if n, at := f.get("port"); n != nil {
		if m.Port, err = portValue(file, n, at); err != nil {
			return nil, err
		}
	}
	if n, at := f.get("ports"); n != nil {
		if err := wantKind(file, n, at, kindList); err != nil {
			return nil, err
		}
		if len(n.elems) > maxPorts {
			return nil, fileErr(file, at, "has %d items; at most %d are allowed", len(n.elems), maxPorts)
		}
		for i, e := range n.elems {
			p, err := portValue(file, e, at.index(i))
			if err != nil {
				return nil, err
			}
			m.Ports = append(m.Ports, p)
		}
	}
	if m.Sandbox, err = decodeSandbox(file, f); err != nil {
		return nil, err
	}
	return m, nil
}

func decodeServer(f *fields) (*ManifestServer, error) {
	n, at := f.get("server")
	if n == nil {
		return nil, nil
	}
	sf, err := objectFields(f.file, n, at, false, "command", "args", "envKeys")
	if err != nil {
		return nil, err
	}
	s := &ManifestServer{}
	cn, cat, err := sf.required("command")
	if err != nil {
		return nil, err
	}
	if s.Command, err = stringValue(f.file, cn, cat, maxCommandLen); err != nil {
		return nil, err
	}
	if s.Command == "" {
		return nil, fileErr(f.file, cat, "is empty")
	}
	if s.Args, err = sf.strings("args", maxArgs, maxArgLen, nil); err != nil {
		return nil, err
	}
	if s.EnvKeys, err = sf.strings("envKeys", maxEnvVarsDeclared, 128, ValidEnvName); err != nil {
		return nil, err
	}
	return s, nil
}

func decodeEnvVars(f *fields) ([]EnvVar, error) {
	n, at := f.get("env_vars")
	if n == nil {
		return nil, nil
	}
	if err := wantKind(f.file, n, at, kindList); err != nil {
		return nil, err
	}
	if len(n.elems) > maxEnvVarsDeclared {
		return nil, fileErr(f.file, at, "has %d items; at most %d are allowed", len(n.elems), maxEnvVarsDeclared)
	}
	out := make([]EnvVar, 0, len(n.elems))
	seen := make(map[string]bool)
	for i, e := range n.elems {
		eat := at.index(i)
		ef, err := objectFields(f.file, e, eat, false, "name", "default", "secret", "required")
		if err != nil {
			return nil, err
		}
		var v EnvVar
		nn, nat, err := ef.required("name")
		if err != nil {
			return nil, err
		}
		if v.Name, err = stringValue(f.file, nn, nat, 128); err != nil {
			return nil, err
		}
		if err := ValidEnvName(v.Name); err != nil {
			return nil, fileErr(f.file, nat, "%s", err.Error())
		}
		if seen[v.Name] {
			return nil, fileErr(f.file, nat, "declares %s a second time", v.Name)
		}
		seen[v.Name] = true
		if dn, dat := ef.get("default"); dn != nil {
			switch dn.kind {
			case kindString:
				if len(dn.text) > maxEnvString {
					return nil, fileErr(f.file, dat, "is longer than %d bytes", maxEnvString)
				}
				v.Default = dn.text
			case kindNumber:
				v.Default = dn.text
			case kindBool:
				v.Default = strconv.FormatBool(dn.b)
			default:
				return nil, fileErr(f.file, dat, "must be a string, number or boolean, not %s", dn.kind)
			}
			v.HasDefault = true
		}
		if v.Secret, _, err = ef.boolean("secret"); err != nil {
			return nil, err
		}
		if v.Required, _, err = ef.boolean("required"); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func decodeDocker(f *fields) (string, error) {
	n, at := f.get("docker")
	if n == nil {
		return "", nil
	}
	df, err := objectFields(f.file, n, at, false, "composefile")
	if err != nil {
		return "", err
	}
	cn, cat, err := df.required("composefile")
	if err != nil {
		return "", err
	}
	cf, err := stringValue(f.file, cn, cat, maxPathLen)
	if err != nil {
		return "", err
	}
	// The compose file is read from inside the bundle folder only.
	if !filepath.IsLocal(cf) {
		return "", fileErr(f.file, cat, "must be a relative path inside the bundle folder")
	}
	return cf, nil
}

// decodeSandbox reads the sandbox section strictly. The seed writes
// "network" without its sandbox prefix; a top-level network is read as
// sandbox.network, and a manifest that gives both is refused rather than
// having one silently win.
func decodeSandbox(file string, f *fields) (Sandbox, error) {
	var sb Sandbox
	// Both are our keys, read strictly: null is not "absent" here.
	topNet, topAt := f.m["network"], path(nil).field("network")
	n, at := f.m["sandbox"], path(nil).field("sandbox")
	if n == nil && topNet == nil {
		return sb, nil
	}
	sb.Declared = true
	var netNode *node
	var netAt path
	if n != nil {
		sf, err := objectFields(file, n, at, true, "network", "files", "ownEnvFile", "doors")
		if err != nil {
			return sb, err
		}
		netNode, netAt = sf.get("network")
		if netNode != nil && topNet != nil {
			return sb, fileErr(file, topAt, "is given both here and as sandbox.network; keep only sandbox.network")
		}
		if sb.Files, err = decodeFiles(file, sf); err != nil {
			return sb, err
		}
		if sb.OwnEnvFile, _, err = sf.boolean("ownEnvFile"); err != nil {
			return sb, err
		}
		if dn, dat := sf.get("doors"); dn != nil {
			if sb.Doors, err = stringValue(file, dn, dat, 64); err != nil {
				return sb, err
			}
			if err := ValidID(sb.Doors); err != nil {
				return sb, fileErr(file, dat, "%s", err.Error())
			}
		}
	}
	if topNet != nil {
		netNode, netAt = topNet, topAt
	}
	if netNode != nil {
		var err error
		if sb.Network, err = decodeNetwork(file, netNode, netAt); err != nil {
			return sb, err
		}
	}
	return sb, nil
}

func decodeNetwork(file string, n *node, at path) (Network, error) {
	var nw Network
	switch n.kind {
	case kindString:
		switch n.text {
		case "none":
			return nw, nil
		case "internet":
			nw.Internet = true
			return nw, nil
		}
		return nw, fileErr(file, at, "must be \"none\", \"internet\" or an object {internet, hosts}")
	case kindObject:
		nf, err := objectFields(file, n, at, true, "internet", "hosts")
		if err != nil {
			return nw, err
		}
		if nw.Internet, _, err = nf.boolean("internet"); err != nil {
			return nw, err
		}
		if nw.Hosts, err = fieldNames(file, nf, "hosts"); err != nil {
			return nw, err
		}
		return nw, nil
	}
	return nw, fileErr(file, at, "must be \"none\", \"internet\" or an object {internet, hosts}, not %s", n.kind)
}

func decodeFiles(file string, sf *fields) (Files, error) {
	var fl Files
	n, at := sf.get("files")
	if n == nil {
		return fl, nil
	}
	ff, err := objectFields(file, n, at, true, "read", "write", "oauthDir")
	if err != nil {
		return fl, err
	}
	if fl.Read, err = fieldNames(file, ff, "read"); err != nil {
		return fl, err
	}
	if fl.Write, err = fieldNames(file, ff, "write"); err != nil {
		return fl, err
	}
	if on, oat := ff.get("oauthDir"); on != nil {
		if fl.OAuthDir, err = stringValue(file, on, oat, 128); err != nil {
			return fl, err
		}
		if err := ValidEnvName(fl.OAuthDir); err != nil {
			return fl, fileErr(file, oat, "%s", err.Error())
		}
	}
	return fl, nil
}

// fieldNames reads a list of environment field names, each listed once.
func fieldNames(file string, f *fields, key string) ([]string, error) {
	names, err := f.strings(key, maxSandboxFields, 128, ValidEnvName)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(names))
	for i, name := range names {
		if seen[name] {
			return nil, fileErr(file, f.at.field(key).index(i), "lists %s a second time", name)
		}
		seen[name] = true
	}
	return names, nil
}
