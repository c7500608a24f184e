package crowhome

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
)

// AddonsFileName is Crow's add-on registry inside CROW_HOME.
const AddonsFileName = "mcp-addons.json"

// Limits on an mcp-addons.json entry. The command and argument limits are
// the AddonWall CRD's (a longer value could not be stored anyway); the env
// limits keep within what exec accepts (MAX_ARG_STRLEN is 128 KiB per
// KEY=value string) rather than letting a spawn fail later.
const (
	maxCommandLen = 512
	maxArgs       = 64
	maxArgLen     = 1024
	maxEnvVars    = 1024
	maxEnvString  = 128 << 10
	maxPathLen    = 4096
	maxURLLen     = 2048
	maxScopes     = 64
)

var (
	sha256Pattern    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	integrityPattern = regexp.MustCompile(`^sha(256|384|512)-[A-Za-z0-9+/]+={0,2}$`)
)

// Entry is one add-on's entry in mcp-addons.json.
//
// Env holds the owner's values, which can be secrets; an Entry prints, logs
// and marshals to JSON without them (see Redacted). It does not marshal back
// to the mcp-addons.json form.
type Entry struct {
	// Command is the program: a bare name, ./relative or absolute. Empty for
	// an entry reached by URL.
	Command string
	// Args are the program's arguments.
	Args []string
	// Env is the entry's environment: names and (secret) values.
	Env Env
	// Cwd is the working folder; empty means the install folder. Always an
	// absolute path when set.
	Cwd string
	// Transport is "stdio", "http" or empty (Crow's default, stdio).
	Transport string
	// URL is an http add-on's address.
	URL string
	// OAuth is an http add-on's sign-in files, nil when it has none.
	OAuth *OAuth
	// CommandSHA256 pins a relative or user-owned launcher (64 lowercase hex).
	CommandSHA256 string
	// NpxIntegrity is what npm reported when the package was pinned.
	NpxIntegrity string
}

// OAuth names an http add-on's sign-in files.
type OAuth struct {
	CredentialsFile string
	// TokenFile is the owner-named token file that sandbox.files.oauthDir
	// refers to.
	TokenFile string
	Scopes    []string
}

// AddonsFile is what ReadAddons found. One bad entry never hides the
// others: it is reported under its id and left out of Entries.
type AddonsFile struct {
	// Entries are the valid entries by id.
	Entries map[string]Entry
	// Problems are the entries whose id is valid but whose content is not,
	// by id: that add-on stays off with this reason.
	Problems map[string]*FileError
	// BadKeys are top-level keys that are not valid add-on ids. No add-on
	// can be named after them; they are reported, never used as a path.
	BadKeys []*FileError
	// SHA256 is the hex sha256 of the bytes that were parsed.
	SHA256 string

	badSeen map[string]struct{}
}

// ReadAddons reads <CROW_HOME>/mcp-addons.json. The error is a *FileError
// for a file that cannot be read or is not a JSON object as a whole; errors
// confined to one entry are in the result instead.
func ReadAddons(file string) (*AddonsFile, error) {
	data, err := readRegular(file, false)
	if err != nil {
		return nil, err
	}
	return parseAddons(file, data)
}

func addonsMapKeys(parent path) bool {
	switch parent.depth() {
	case 0:
		return true // add-on ids
	case 2:
		return parent.s.kind == segField && parent.s.key == "env" // env names
	}
	return false
}

func parseAddons(file string, data []byte) (*AddonsFile, error) {
	root, problems, fatal := parseJSON(data, addonsMapKeys)
	if fatal != nil {
		return nil, fileErr(file, fatal.at, "%s", fatal.msg)
	}
	if root.kind != kindObject {
		return nil, fileErr(file, nil, "must be a JSON object keyed by add-on id, not %s", root.kind)
	}
	out := &AddonsFile{
		Entries:  make(map[string]Entry),
		Problems: make(map[string]*FileError),
		SHA256:   sha256Hex(data),
		badSeen:  make(map[string]struct{}),
	}
	// A problem's first path element is the id it belongs to.
	for _, pr := range problems {
		if pr.at.depth() == 0 {
			return nil, fileErr(file, pr.at, "%s", pr.msg)
		}
		out.report(file, pr.at.segs()[0].key, fileErr(file, pr.at, "%s", pr.msg))
	}
	for _, mem := range root.members {
		id := mem.key
		if err := ValidID(id); err != nil {
			out.report(file, id, fileErr(file, mem.at, "%s", err.Error()))
			continue
		}
		if _, bad := out.Problems[id]; bad {
			continue
		}
		e, err := decodeEntry(file, mem.val, mem.at)
		if err != nil {
			out.report(file, id, err)
			continue
		}
		out.Entries[id] = e
	}
	for id := range out.Problems {
		delete(out.Entries, id)
	}
	sort.Slice(out.BadKeys, func(i, j int) bool { return out.BadKeys[i].Key < out.BadKeys[j].Key })
	out.badSeen = nil
	return out, nil
}

// report keeps the first problem of each key.
func (a *AddonsFile) report(file, id string, err error) {
	var fe *FileError
	if !errors.As(err, &fe) {
		fe = &FileError{File: file, Msg: err.Error(), Err: err}
	}
	if ValidID(id) != nil {
		if _, dup := a.badSeen[id]; !dup {
			a.badSeen[id] = struct{}{}
			a.BadKeys = append(a.BadKeys, fe)
		}
		return
	}
	if _, dup := a.Problems[id]; !dup {
		a.Problems[id] = fe
	}
}

var entryKeys = []string{"command", "args", "env", "cwd", "transport", "url", "oauth", "command_sha256", "npx_integrity"}

func decodeEntry(file string, n *node, at path) (Entry, error) {
	var e Entry
	f, err := objectFields(file, n, at, false, entryKeys...)
	if err != nil {
		return e, err
	}
	if e.Command, err = f.str("command", maxCommandLen); err != nil {
		return e, err
	}
	if e.Args, err = f.strings("args", maxArgs, maxArgLen, nil); err != nil {
		return e, err
	}
	if e.Env, err = decodeEnv(f); err != nil {
		return e, err
	}
	if e.Cwd, err = f.str("cwd", maxPathLen); err != nil {
		return e, err
	}
	if e.Cwd != "" && !filepath.IsAbs(e.Cwd) {
		return e, fileErr(file, at.field("cwd"), "must be an absolute path")
	}
	if e.Transport, err = f.str("transport", 16); err != nil {
		return e, err
	}
	if e.Transport != "" && e.Transport != "stdio" && e.Transport != "http" {
		return e, fileErr(file, at.field("transport"), "must be \"stdio\" or \"http\"")
	}
	if e.URL, err = f.str("url", maxURLLen); err != nil {
		return e, err
	}
	if e.OAuth, err = decodeOAuth(f); err != nil {
		return e, err
	}
	if e.CommandSHA256, err = f.str("command_sha256", 64); err != nil {
		return e, err
	}
	if e.CommandSHA256 != "" && !sha256Pattern.MatchString(e.CommandSHA256) {
		return e, fileErr(file, at.field("command_sha256"), "must be 64 lowercase hex digits (a sha256)")
	}
	if e.NpxIntegrity, err = f.str("npx_integrity", 256); err != nil {
		return e, err
	}
	if e.NpxIntegrity != "" && !integrityPattern.MatchString(e.NpxIntegrity) {
		return e, fileErr(file, at.field("npx_integrity"), "must be an npm integrity string (sha512-<base64>)")
	}
	if e.Command == "" && e.URL == "" {
		return e, fileErr(file, at, "has neither a command nor a url, so there is nothing to start")
	}
	return e, nil
}

func decodeEnv(f *fields) (Env, error) {
	n, at := f.get("env")
	if n == nil {
		return Env{}, nil
	}
	if err := wantKind(f.file, n, at, kindObject); err != nil {
		return Env{}, err
	}
	if len(n.members) > maxEnvVars {
		return Env{}, fileErr(f.file, at, "has %d variables; at most %d are allowed", len(n.members), maxEnvVars)
	}
	env := make(map[string]string, len(n.members))
	for _, mem := range n.members {
		if err := ValidEnvName(mem.key); err != nil {
			return Env{}, fileErr(f.file, mem.at, "%s", err.Error())
		}
		// The message must never quote the value: it can be a secret.
		if mem.val.kind != kindString {
			return Env{}, fileErr(f.file, mem.at, "must be a string, not %s", mem.val.kind)
		}
		if len(mem.key)+1+len(mem.val.text)+1 > maxEnvString {
			return Env{}, fileErr(f.file, mem.at, "is longer than exec allows (%d bytes for NAME=value)", maxEnvString)
		}
		env[mem.key] = mem.val.text
	}
	return NewEnv(env), nil
}

func decodeOAuth(f *fields) (*OAuth, error) {
	n, at := f.get("oauth")
	if n == nil {
		return nil, nil
	}
	of, err := objectFields(f.file, n, at, false, "credentials_file", "token_file", "scopes")
	if err != nil {
		return nil, err
	}
	o := &OAuth{}
	if o.CredentialsFile, err = of.str("credentials_file", maxPathLen); err != nil {
		return nil, err
	}
	if o.TokenFile, err = of.str("token_file", maxPathLen); err != nil {
		return nil, err
	}
	if o.Scopes, err = of.strings("scopes", maxScopes, maxURLLen, nil); err != nil {
		return nil, err
	}
	return o, nil
}

// String, GoString, Format, MarshalJSON and MarshalLog show an Entry
// without its environment values or arguments (either can carry a secret),
// so a careless log line or %v never prints one.
func (e Entry) String() string { return fmt.Sprintf("%+v", e.Redacted()) }

// GoString is String; %#v of an Entry shows no values either.
func (e Entry) GoString() string { return "crowhome.Entry" + e.String() }

// Format prints the redacted form for every verb, %d and %x included.
func (e Entry) Format(s fmt.State, verb rune) { _, _ = fmt.Fprint(s, e.String()) }

// MarshalJSON marshals the redacted form.
func (e Entry) MarshalJSON() ([]byte, error) { return jsonMarshal(e.Redacted()) }

// MarshalLog is logr's hook: loggers print the redacted form.
func (e Entry) MarshalLog() any { return e.Redacted() }

// RedactedEntry is an Entry safe to print: env names but no values, the
// number of arguments but not their text, whether a URL is set but not the
// URL (it can carry a token in its query or user part).
type RedactedEntry struct {
	Command       string   `json:"command,omitempty"`
	ArgCount      int      `json:"argCount"`
	EnvKeys       []string `json:"envKeys,omitempty"`
	Cwd           string   `json:"cwd,omitempty"`
	Transport     string   `json:"transport,omitempty"`
	HasURL        bool     `json:"hasURL,omitempty"`
	HasOAuth      bool     `json:"hasOAuth,omitempty"`
	CommandSHA256 string   `json:"commandSHA256,omitempty"`
	NpxIntegrity  string   `json:"npxIntegrity,omitempty"`
}

// Redacted returns the Entry without anything that can be a secret.
func (e Entry) Redacted() RedactedEntry {
	return RedactedEntry{
		Command:       e.Command,
		ArgCount:      len(e.Args),
		EnvKeys:       e.Env.Keys(),
		Cwd:           e.Cwd,
		Transport:     e.Transport,
		HasURL:        e.URL != "",
		HasOAuth:      e.OAuth != nil,
		CommandSHA256: e.CommandSHA256,
		NpxIntegrity:  e.NpxIntegrity,
	}
}

// Env is an entry's environment: names and values. The values are held
// inside a closure so that no printer reaches them — not fmt through Env's
// own methods, and not fmt's reflection either when an Env (or an Entry) is
// an unexported field of someone else's struct, where methods cannot run:
// reflection prints a func as an address, whatever the verb. Read a value
// with Get; Values copies all of them for a spawn.
type Env struct {
	vars func() map[string]string
}

// NewEnv makes an Env holding a copy of m.
func NewEnv(m map[string]string) Env {
	if len(m) == 0 {
		return Env{}
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return Env{vars: func() map[string]string { return c }}
}

func (env Env) m() map[string]string {
	if env.vars == nil {
		return nil
	}
	return env.vars()
}

// Get returns the value of name and whether the entry sets it.
func (env Env) Get(name string) (string, bool) {
	v, ok := env.m()[name]
	return v, ok
}

// Len is the number of variables.
func (env Env) Len() int { return len(env.m()) }

// Values returns a copy of every name and value, for building a child's
// environment. Never log it.
func (env Env) Values() map[string]string {
	out := make(map[string]string, env.Len())
	for k, v := range env.m() {
		out[k] = v
	}
	return out
}

// Keys returns the variable names, sorted.
func (env Env) Keys() []string {
	keys := make([]string, 0, env.Len())
	for k := range env.m() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (env Env) String() string { return fmt.Sprintf("Env%v(values redacted)", env.Keys()) }

// GoString is String.
func (env Env) GoString() string { return "crowhome." + env.String() }

// Format prints names only, for every verb.
func (env Env) Format(s fmt.State, verb rune) { _, _ = fmt.Fprint(s, env.String()) }

// MarshalJSON marshals the names only.
func (env Env) MarshalJSON() ([]byte, error) { return jsonMarshal(env.Keys()) }

// MarshalLog is logr's hook: names only.
func (env Env) MarshalLog() any { return env.Keys() }
