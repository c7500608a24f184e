package decide

import (
	"strings"

	v1alpha1 "github.com/addonwall/addonwall/api/v1alpha1"
)

// ReachFacts is what an add-on's wall hands it, in names only: environment
// field names, door set and state folder names, never their values, so the
// line can sit in status and in a notice without carrying a secret.
type ReachFacts struct {
	// Internet allows HTTPS on port 443 to public addresses.
	Internet bool
	// Hosts are the fields whose values are exact host:port entries.
	Hosts []string
	// Read and Write are the fields whose values are bound read-only and
	// read-write.
	Read  []string
	Write []string
	// OAuthDir is the field naming the token file whose folder is bound.
	OAuthDir string
	// OwnEnvFile is true when its own .env is bound read-only.
	OwnEnvFile bool
	// StateDirs are the Crow-home state folders it is handed.
	StateDirs []string
	// Doors is the door set it asks the gateway through, "" for none.
	Doors string
	// CrowDb and Storage add the residuals of SharesCrowDatabase and
	// UsesAllStorage to the line.
	CrowDb  bool
	Storage bool
}

// ReachOf reads the facts from an AddonWall profile.
func ReachOf(p v1alpha1.Profile) ReachFacts {
	r := ReachFacts{
		Internet:   p.Network.Internet,
		Hosts:      fieldNames(p.Network.Hosts),
		Read:       fieldNames(p.Files.Read),
		Write:      fieldNames(p.Files.Write),
		OwnEnvFile: p.OwnEnvFile,
		StateDirs:  append([]string(nil), p.StateDirs...),
		Doors:      p.Doors,
		CrowDb:     p.CrowDb,
		Storage:    p.Storage,
	}
	if p.Files.OAuthDir != nil {
		r.OAuthDir = p.Files.OAuthDir.Name
	}
	return r
}

func fieldNames(fs []v1alpha1.EnvField) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

type reachWords struct {
	network, none, internet, hosts, and        string
	files, ownData, read, write, oauth, dotenv string
	state, doors, also                         string
}

var reachText = map[Lang]reachWords{
	LangEN: {
		network: "network: ", none: "none", internet: "internet (HTTPS, port 443)",
		hosts: "listed hosts from ", and: " and ",
		files: "files: ", ownData: "its own data folder", read: "reads ", write: "writes ",
		oauth: "sign-in folder from ", dotenv: "its own .env", state: "state folders ",
		doors: "doors: ", also: "it can also ",
	},
	LangES: {
		network: "red: ", none: "ninguna", internet: "internet (HTTPS, puerto 443)",
		hosts: "direcciones indicadas en ", and: " y ",
		files: "archivos: ", ownData: "su propia carpeta de datos", read: "lee ", write: "escribe ",
		oauth: "carpeta de acceso de ", dotenv: "su propio .env", state: "carpetas de estado ",
		doors: "puertas: ", also: "además puede ",
	},
}

// Reach is the one-line summary of what an add-on can reach, e.g.
// "network: internet (HTTPS, port 443); files: its own data folder, reads
// NOTES_DIR; doors: none". Names are made inert, so a field or folder name
// cannot carry markup or control characters into a surface. A crow.db or
// storage reader's line ends with what that residual lets it do.
func Reach(r ReachFacts, lang Lang) string {
	w := reachText[known(lang)]
	var net string
	switch {
	case r.Internet && len(r.Hosts) > 0:
		net = w.internet + w.and + w.hosts + names(r.Hosts)
	case r.Internet:
		net = w.internet
	case len(r.Hosts) > 0:
		net = w.hosts + names(r.Hosts)
	default:
		net = w.none
	}
	files := []string{w.ownData}
	if len(r.Read) > 0 {
		files = append(files, w.read+names(r.Read))
	}
	if len(r.Write) > 0 {
		files = append(files, w.write+names(r.Write))
	}
	if r.OAuthDir != "" {
		files = append(files, w.oauth+Inert(r.OAuthDir))
	}
	if r.OwnEnvFile {
		files = append(files, w.dotenv)
	}
	if len(r.StateDirs) > 0 {
		files = append(files, w.state+names(r.StateDirs))
	}
	doors := w.none
	if r.Doors != "" {
		doors = Inert(r.Doors)
	}
	parts := []string{
		w.network + net,
		w.files + strings.Join(files, ", "),
		w.doors + doors,
	}
	var also []string
	if r.CrowDb {
		also = append(also, Text(ReachSharesDB, lang))
	}
	if r.Storage {
		also = append(also, Text(ReachAllStorage, lang))
	}
	if len(also) > 0 {
		parts = append(parts, w.also+strings.Join(also, w.and))
	}
	return strings.Join(parts, "; ")
}

func names(ns []string) string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = Inert(n)
	}
	return strings.Join(out, ", ")
}
