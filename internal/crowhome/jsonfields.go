package crowhome

import (
	"strconv"
	"strings"
)

// fields is an object whose keys were checked against a format's list.
type fields struct {
	file string
	at   path
	m    map[string]*node
	// nullIsAbsent follows Crow's own JavaScript, which reads an optional
	// field set to null the same as a missing one. Our formats do not.
	nullIsAbsent bool
}

// objectFields checks that n is an object whose keys are all in known
// (strict: our formats) or, for Crow's formats that grow new keys, that no
// unknown key is a letter-case variant of a known one — "Command" next to
// no "command" would otherwise be skipped while a case-folding reader would
// take it.
func objectFields(file string, n *node, at path, strict bool, known ...string) (*fields, error) {
	if n.kind != kindObject {
		return nil, fileErr(file, at, "must be an object, not %s", n.kind)
	}
	f := &fields{file: file, at: at, m: make(map[string]*node, len(n.members)), nullIsAbsent: !strict}
	for _, mem := range n.members {
		if contains(known, mem.key) {
			f.m[mem.key] = mem.val
			continue
		}
		var near string
		for _, k := range known {
			if foldKey(k) == foldKey(mem.key) {
				near = k
			}
		}
		switch {
		case near != "":
			return nil, fileErr(file, mem.at, "is not a known key; keys are case-sensitive (the key is %s)", strconv.Quote(near))
		case strict:
			return nil, fileErr(file, mem.at, "is not a known key here (known: %s)", strings.Join(known, ", "))
		}
	}
	return f, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// get returns the value of key, or nil when it is missing (or null, where
// null means missing).
func (f *fields) get(key string) (*node, path) {
	at := f.at.field(key)
	n, ok := f.m[key]
	if !ok || (f.nullIsAbsent && n.kind == kindNull) {
		return nil, at
	}
	return n, at
}

func (f *fields) required(key string) (*node, path, error) {
	n, at := f.get(key)
	if n == nil {
		return nil, at, fileErr(f.file, at, "is missing")
	}
	return n, at, nil
}

func wantKind(file string, n *node, at path, k kind) error {
	if n.kind != k {
		return fileErr(file, at, "must be %s, not %s", k, n.kind)
	}
	return nil
}

// str reads an optional string no longer than maxLen bytes.
func (f *fields) str(key string, maxLen int) (string, error) {
	n, at := f.get(key)
	if n == nil {
		return "", nil
	}
	return stringValue(f.file, n, at, maxLen)
}

func stringValue(file string, n *node, at path, maxLen int) (string, error) {
	if err := wantKind(file, n, at, kindString); err != nil {
		return "", err
	}
	if len(n.text) > maxLen {
		return "", fileErr(file, at, "is longer than %d bytes", maxLen)
	}
	return n.text, nil
}

// boolean reads an optional boolean; present reports whether it was there.
func (f *fields) boolean(key string) (v, present bool, err error) {
	n, at := f.get(key)
	if n == nil {
		return false, false, nil
	}
	if err := wantKind(f.file, n, at, kindBool); err != nil {
		return false, true, err
	}
	return n.b, true, nil
}

// requiredBool reads a boolean that must be there.
func (f *fields) requiredBool(key string) (bool, error) {
	v, present, err := f.boolean(key)
	if err == nil && !present {
		return false, fileErr(f.file, f.at.field(key), "is missing (true or false)")
	}
	return v, err
}

// strings reads an optional list of strings, each checked by each.
func (f *fields) strings(key string, maxItems, maxLen int, each func(string) error) ([]string, error) {
	n, at := f.get(key)
	if n == nil {
		return nil, nil
	}
	return stringList(f.file, n, at, maxItems, maxLen, each)
}

func stringList(file string, n *node, at path, maxItems, maxLen int, each func(string) error) ([]string, error) {
	if err := wantKind(file, n, at, kindList); err != nil {
		return nil, err
	}
	if len(n.elems) > maxItems {
		return nil, fileErr(file, at, "has %d items; at most %d are allowed", len(n.elems), maxItems)
	}
	out := make([]string, 0, len(n.elems))
	for i, e := range n.elems {
		s, err := stringValue(file, e, at.index(i), maxLen)
		if err != nil {
			return nil, err
		}
		if each != nil {
			if err := each(s); err != nil {
				return nil, fileErr(file, at.index(i), "%s", err.Error())
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// port reads a TCP/UDP port number: an integer literal from 1 to 65535.
func portValue(file string, n *node, at path) (int, error) {
	if err := wantKind(file, n, at, kindNumber); err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(n.text, 10, 32)
	if err != nil || v < 1 || v > 65535 {
		return 0, fileErr(file, at, "must be a whole number from 1 to 65535")
	}
	return int(v), nil
}
