package crowhome

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits every reader enforces, whatever the format.
const (
	// MaxFileSize is the largest file a reader accepts (4 MiB).
	MaxFileSize = 4 << 20
	// MaxDepth is the deepest nesting of objects and lists a reader accepts.
	MaxDepth = 64
	// maxValues bounds the tree a 4 MiB document can expand into
	// ([0,0,0,…] is two bytes a value); Crow's real files hold a few thousand.
	maxValues = 1 << 16
)

type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindList
	kindObject
)

func (k kind) String() string {
	switch k {
	case kindNull:
		return "null"
	case kindBool:
		return "a boolean"
	case kindNumber:
		return "a number"
	case kindString:
		return "a string"
	case kindList:
		return "a list"
	default:
		return "an object"
	}
}

type member struct {
	key string
	at  path
	val *node
}

// node is one value of a parsed document. Objects keep every member in
// document order, duplicates included, so nothing the file says is lost
// before the format's rules look at it.
type node struct {
	kind    kind
	text    string // a string's value, or a number's literal text
	b       bool
	members []member
	elems   []*node
}

// problem is a defect confined to one value — a duplicate key, a NUL
// character or a bad escape inside one string. A reader whose format lets
// one entry fail alone (mcp-addons.json) attributes it by its path; the
// others fail the whole file on the first one.
type problem struct {
	at  path
	msg string
	// eof marks "the document ended here", which is how a prefix cut at a
	// NUL byte ends.
	eof bool
}

// mapKeysAt says whether the members of the object at parent are keys the
// owner chose (ids, env names: shown as ["kb"]) rather than keys the format
// defines (shown as .command). It only changes how a path is printed.
type mapKeysAt func(parent path) bool

type jsonParser struct {
	data     []byte
	dec      *json.Decoder
	prev     int
	values   int
	mapKeys  mapKeysAt
	problems []problem
}

// parseJSON walks data token by token (encoding/json's Decoder) into a
// tree. It returns the tree and the value-confined problems, or a fatal
// problem when the document as a whole cannot be trusted: not JSON, a raw
// NUL byte, too large, too deep, or data after the document.
func parseJSON(data []byte, mapKeys mapKeysAt) (*node, []problem, *problem) {
	if len(data) > MaxFileSize {
		return nil, nil, &problem{msg: fmt.Sprintf("is larger than %d bytes", MaxFileSize)}
	}
	if mapKeys == nil {
		mapKeys = func(path) bool { return false }
	}
	// encoding/json reports a raw NUL as a syntax error at an offset counted
	// from the start of the value, so the NUL is found here instead and the
	// document before it says where it sits.
	if i := bytes.IndexByte(data, 0); i >= 0 {
		_, _, fatal := parseJSON(data[:i], mapKeys)
		switch {
		case fatal == nil:
			return nil, nil, &problem{msg: "has a NUL byte after the end of the document"}
		case fatal.eof:
			return nil, nil, &problem{at: fatal.at, msg: fmt.Sprintf("has a NUL byte (byte %d of the file)", i)}
		}
		return nil, nil, fatal
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := &jsonParser{data: data, dec: dec, mapKeys: mapKeys}
	root, fatal := p.value(nil, 0)
	if fatal != nil {
		return nil, nil, fatal
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, &problem{msg: "has data after the end of the document"}
	}
	return root, p.problems, nil
}

// next returns the next token and the raw bytes it came from (with any
// separator and white space before it).
func (p *jsonParser) next(at path) (json.Token, []byte, *problem) {
	tok, err := p.dec.Token()
	if err != nil {
		return nil, nil, p.syntax(at, err)
	}
	off := int(p.dec.InputOffset())
	if off > len(p.data) || off < p.prev {
		return nil, nil, &problem{at: at, msg: "could not be read as JSON"}
	}
	raw := p.data[p.prev:off]
	p.prev = off
	return tok, raw, nil
}

func (p *jsonParser) syntax(at path, err error) *problem {
	// A SyntaxError's offset counts from the start of the value being read,
	// not of the file, so the path is the location given.
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return &problem{at: at, msg: "is not valid JSON: " + se.Error()}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		if len(bytes.TrimSpace(p.data)) == 0 {
			return &problem{at: at, msg: "is empty, not a JSON document", eof: true}
		}
		return &problem{at: at, msg: "ends before the JSON document does (a truncated file?)", eof: true}
	default:
		return &problem{at: at, msg: "is not valid JSON: " + err.Error()}
	}
}

func (p *jsonParser) value(at path, depth int) (*node, *problem) {
	p.values++
	if p.values > maxValues {
		return nil, &problem{at: at, msg: fmt.Sprintf("holds more than %d values", maxValues)}
	}
	tok, raw, fatal := p.next(at)
	if fatal != nil {
		return nil, fatal
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth+1 > MaxDepth {
			return nil, &problem{at: at, msg: fmt.Sprintf("is nested deeper than %d levels", MaxDepth)}
		}
		switch t {
		case '{':
			return p.object(at, depth+1)
		case '[':
			return p.list(at, depth+1)
		}
		return nil, &problem{at: at, msg: fmt.Sprintf("is not valid JSON: unexpected %q", string(t))}
	case string:
		p.checkString(at, t, raw, "value")
		return &node{kind: kindString, text: t}, nil
	case json.Number:
		return &node{kind: kindNumber, text: string(t)}, nil
	case bool:
		return &node{kind: kindBool, b: t}, nil
	case nil:
		return &node{kind: kindNull}, nil
	}
	return nil, &problem{at: at, msg: "is not valid JSON"}
}

func (p *jsonParser) object(at path, depth int) (*node, *problem) {
	n := &node{kind: kindObject}
	seen := make(map[string]struct{})
	folded := make(map[string]string)
	asMapKeys := p.mapKeys(at)
	for p.dec.More() {
		tok, raw, fatal := p.next(at)
		if fatal != nil {
			return nil, fatal
		}
		key, ok := tok.(string)
		if !ok {
			return nil, &problem{at: at, msg: "is not valid JSON: an object key is not a string"}
		}
		child := at.field(key)
		if asMapKeys {
			child = at.mapKey(key)
		}
		p.checkString(child, key, raw, "key")
		if _, dup := seen[key]; dup {
			p.problems = append(p.problems, problem{at: child, msg: "is a duplicate key: the object already has it"})
		} else if first, clash := folded[foldKey(key)]; clash {
			p.problems = append(p.problems, problem{at: child, msg: "differs only in letter case from the key " + quoteShort(first) + " in the same object; keys are case-sensitive and must not collide"})
		}
		seen[key] = struct{}{}
		if _, ok := folded[foldKey(key)]; !ok {
			folded[foldKey(key)] = key
		}
		val, fatal := p.value(child, depth)
		if fatal != nil {
			return nil, fatal
		}
		n.members = append(n.members, member{key: key, at: child, val: val})
	}
	if _, _, fatal := p.next(at); fatal != nil { // the closing brace
		return nil, fatal
	}
	return n, nil
}

func (p *jsonParser) list(at path, depth int) (*node, *problem) {
	n := &node{kind: kindList}
	for i := 0; p.dec.More(); i++ {
		val, fatal := p.value(at.index(i), depth)
		if fatal != nil {
			return nil, fatal
		}
		n.elems = append(n.elems, val)
	}
	if _, _, fatal := p.next(at); fatal != nil { // the closing bracket
		return nil, fatal
	}
	return n, nil
}

// checkString records what encoding/json accepts silently: an escaped NUL
// (\u0000), raw bytes that are not UTF-8 and unpaired surrogate escapes
// (both of which it turns into U+FFFD without a word).
func (p *jsonParser) checkString(at path, s string, raw []byte, what string) {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		p.problems = append(p.problems, problem{at: at, msg: "has a NUL character in its " + what})
	case !utf8.Valid(raw):
		p.problems = append(p.problems, problem{at: at, msg: "has bytes that are not UTF-8 in its " + what})
	case unpairedSurrogate(raw):
		p.problems = append(p.problems, problem{at: at, msg: "has an unpaired UTF-16 surrogate escape in its " + what})
	}
}

// unpairedSurrogate scans one JSON string token (raw, as the decoder
// accepted it, possibly after a separator) for a \uD800–\uDFFF escape that
// is not a high surrogate followed at once by a low one.
func unpairedSurrogate(raw []byte) bool {
	i := bytes.IndexByte(raw, '"')
	if i < 0 {
		return false
	}
	for i++; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			return false
		case '\\':
		default:
			continue
		}
		i++
		if i >= len(raw) || raw[i] != 'u' {
			continue
		}
		r, ok := hex4(raw[i+1:])
		if !ok {
			return false
		}
		i += 4
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		case r >= 0xD800 && r <= 0xDBFF:
			if i+2 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if lo, ok := hex4(raw[i+3:]); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 6
					continue
				}
			}
			return true
		}
	}
	return false
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 16)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}

// foldKey maps a key to one spelling per case-folding class (each rune to
// the smallest rune it folds with), so "Command", "COMMAND" and "command"
// share one, and so do "k" and the Kelvin sign.
func foldKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b.WriteRune(m)
	}
	return b.String()
}

// decodeStrict parses a document of one of our own formats, where any
// problem fails the whole file.
func decodeStrict(file string, data []byte, mapKeys mapKeysAt) (*node, error) {
	root, problems, fatal := parseJSON(data, mapKeys)
	if fatal != nil {
		return nil, fileErr(file, fatal.at, "%s", fatal.msg)
	}
	if len(problems) > 0 {
		return nil, fileErr(file, problems[0].at, "%s", problems[0].msg)
	}
	return root, nil
}

func fileErr(file string, at path, format string, args ...any) *FileError {
	return &FileError{File: file, Key: at.String(), Msg: fmt.Sprintf(format, args...)}
}
