package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The store keeps an owner's file as the owner wrote it: when it writes an
// object back, it edits the existing YAML node tree (go.yaml.in/yaml/v3's
// Node API) instead of marshalling afresh, so comments and key order
// survive. This file holds that tree work: strict parsing into JSON-like
// values, building a tree from JSON in field order, and merging a new
// value into an old tree.

// syntaxError is a file that is not one YAML document of the supported
// subset; line is 1-based, 0 when unknown.
type syntaxError struct {
	line int
	msg  string
}

func (e *syntaxError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("line %d: %s", e.line, e.msg)
	}
	return e.msg
}

// parseDocument reads exactly one YAML document. An empty file, a second
// document, aliases, merge keys and non-string keys are errors: an object
// file is plain data, and a strict reader names what it refuses.
func parseDocument(data []byte) (*yaml.Node, error) {
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, &syntaxError{msg: "file holds a NUL byte"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &syntaxError{msg: "file is empty"}
		}
		return nil, &syntaxError{line: yamlErrorLine(err), msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := 0
		if err == nil {
			line = extra.Line
		}
		return nil, &syntaxError{line: line, msg: "file holds more than one YAML document"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &syntaxError{msg: "file is not one YAML document"}
	}
	if doc.Content[0].Kind != yaml.MappingNode {
		return nil, &syntaxError{line: doc.Content[0].Line, msg: "top level must be a mapping (apiVersion, kind, metadata, spec)"}
	}
	return &doc, nil
}

func yamlErrorLine(err error) int {
	// yaml.v3 reports "yaml: line N: ..." for syntax errors.
	s := strings.TrimPrefix(err.Error(), "yaml: ")
	if !strings.HasPrefix(s, "line ") {
		return 0
	}
	s = strings.TrimPrefix(s, "line ")
	n, err := strconv.Atoi(s[:strings.IndexFunc(s+":", func(r rune) bool { return r < '0' || r > '9' })])
	if err != nil {
		return 0
	}
	return n
}

// nodeValue converts a YAML node into the values encoding/json produces:
// map[string]any, []any, string, int64, float64, bool and nil.
func nodeValue(n *yaml.Node, path string) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil, &syntaxError{line: n.Line, msg: "not one YAML document"}
		}
		return nodeValue(n.Content[0], path)
	case yaml.AliasNode:
		return nil, &syntaxError{line: n.Line, msg: fmt.Sprintf("%s: YAML aliases are not supported", pathOrTop(path))}
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				if k.ShortTag() == "!!merge" {
					return nil, &syntaxError{line: k.Line, msg: fmt.Sprintf("%s: YAML merge keys (<<) are not supported", pathOrTop(path))}
				}
				return nil, &syntaxError{line: k.Line, msg: fmt.Sprintf("%s: key %q is not a string", pathOrTop(path), k.Value)}
			}
			if _, dup := m[k.Value]; dup {
				return nil, &syntaxError{line: k.Line, msg: fmt.Sprintf("%s: key %q appears twice", pathOrTop(path), k.Value)}
			}
			val, err := nodeValue(v, joinPath(path, k.Value))
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			val, err := nodeValue(c, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		return s, nil
	case yaml.ScalarNode:
		return scalarValue(n, path)
	}
	return nil, &syntaxError{line: n.Line, msg: fmt.Sprintf("%s: unsupported YAML node", pathOrTop(path))}
}

func scalarValue(n *yaml.Node, path string) (any, error) {
	switch n.ShortTag() {
	case "!!str", "!!timestamp":
		// A timestamp stays the text the owner wrote; the schema's
		// date-time format judges it.
		return n.Value, nil
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, &syntaxError{line: n.Line, msg: fmt.Sprintf("%s: %v", pathOrTop(path), err)}
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			return nil, &syntaxError{line: n.Line, msg: fmt.Sprintf("%s: integer %q does not fit in 64 bits", pathOrTop(path), n.Value)}
		}
		return i, nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, &syntaxError{line: n.Line, msg: fmt.Sprintf("%s: %q is not a finite number", pathOrTop(path), n.Value)}
		}
		return f, nil
	}
	return nil, &syntaxError{line: n.Line, msg: fmt.Sprintf("%s: YAML tag %s is not supported", pathOrTop(path), n.Tag)}
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func pathOrTop(p string) string {
	if p == "" {
		return "top level"
	}
	return p
}

// fieldLine finds the line of a field path such as
// "spec.launcher.args[2]" or "metadata.labels[app]" in a parsed document,
// for reports that point the owner at the line to fix. It answers the
// deepest line it can reach; 0 if not even the first step exists.
func fieldLine(doc *yaml.Node, path string) int {
	if doc == nil {
		return 0
	}
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	line := 0
	for _, step := range splitFieldPath(path) {
		next := (*yaml.Node)(nil)
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == step {
					line = n.Content[i].Line
					next = n.Content[i+1]
					break
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(step); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
				line = next.Line
			}
		}
		if next == nil {
			return line
		}
		n = next
	}
	return line
}

// splitFieldPath splits a k8s field.Path string into its steps.
func splitFieldPath(p string) []string {
	var steps []string
	for len(p) > 0 {
		switch p[0] {
		case '.':
			p = p[1:]
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return append(steps, p[1:])
			}
			steps = append(steps, p[1:end])
			p = p[end+1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				return append(steps, p)
			}
			steps = append(steps, p[:end])
			p = p[end:]
		}
	}
	return steps
}

// jsonNode builds a YAML node tree from JSON, keeping the JSON's key
// order (encoding/json writes struct fields in declaration order, so a
// fresh file reads apiVersion, kind, metadata, spec, status).
func jsonNode(data []byte) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := jsonNodeFrom(dec)
	if err != nil {
		return nil, fmt.Errorf("build YAML from JSON: %w", err)
	}
	return n, nil
}

func jsonNodeFrom(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", kt)
				}
				v, err := jsonNodeFrom(dec)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, strNode(k), v)
			}
			_, err := dec.Token()
			return n, err
		case '[':
			n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for dec.More() {
				v, err := jsonNodeFrom(dec)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, v)
			}
			_, err := dec.Token()
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case string:
		return strNode(t), nil
	case json.Number:
		if _, err := strconv.ParseInt(t.String(), 10, 64); err == nil {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: t.String()}, nil
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(t)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

func strNode(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if strings.Contains(s, "\n") {
		n.Style = yaml.LiteralStyle
	}
	return n
}

// pruneEmpty drops null values and mappings left empty, so that a file
// the store writes does not carry "creationTimestamp: null" or
// "sessions: {}". The caller checks that the pruned tree still decodes to
// the same object before using it.
func pruneEmpty(n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		if n.Kind == yaml.SequenceNode {
			for _, c := range n.Content {
				pruneEmpty(c)
			}
		}
		return
	}
	kept := n.Content[:0]
	for i := 0; i+1 < len(n.Content); i += 2 {
		v := n.Content[i+1]
		pruneEmpty(v)
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
			continue
		}
		if v.Kind == yaml.MappingNode && len(v.Content) == 0 {
			continue
		}
		kept = append(kept, n.Content[i], v)
	}
	n.Content = kept
}

// mergeNode returns old changed to hold the value of new while keeping
// old's comments, key order and, where a scalar's value did not change,
// its exact spelling. A key only in new goes right after the key that
// precedes it in new (so a missing metadata lands after kind); keys only
// in old are dropped.
func mergeNode(old, new *yaml.Node) *yaml.Node {
	if old == nil {
		return new
	}
	switch {
	case old.Kind == yaml.MappingNode && new.Kind == yaml.MappingNode:
		oldVals := make(map[string]int, len(old.Content)/2)
		for i := 0; i+1 < len(old.Content); i += 2 {
			if _, dup := oldVals[old.Content[i].Value]; !dup {
				oldVals[old.Content[i].Value] = i
			}
		}
		newVals := make(map[string]*yaml.Node, len(new.Content)/2)
		for i := 0; i+1 < len(new.Content); i += 2 {
			newVals[new.Content[i].Value] = new.Content[i+1]
		}
		// Old keys that stay, in old order, then each new key inserted
		// after its predecessor in new's order.
		type pair struct{ k, v *yaml.Node }
		var pairs []pair
		for i := 0; i+1 < len(old.Content); i += 2 {
			k := old.Content[i]
			if nv, ok := newVals[k.Value]; ok && oldVals[k.Value] == i {
				pairs = append(pairs, pair{k, mergeNode(old.Content[i+1], nv)})
			}
		}
		at := -1 // index in pairs of the last new key placed or found
		for i := 0; i+1 < len(new.Content); i += 2 {
			key := new.Content[i].Value
			if _, ok := oldVals[key]; ok {
				for j := range pairs {
					if pairs[j].k.Value == key {
						at = j
						break
					}
				}
				continue
			}
			p := pair{new.Content[i], new.Content[i+1]}
			pairs = append(pairs, pair{})
			copy(pairs[at+2:], pairs[at+1:])
			pairs[at+1] = p
			at++
		}
		content := make([]*yaml.Node, 0, 2*len(pairs))
		for _, p := range pairs {
			content = append(content, p.k, p.v)
		}
		out := *old
		out.Content = content
		if len(content) == 0 {
			out.Style = yaml.FlowStyle
		}
		return &out
	case old.Kind == yaml.SequenceNode && new.Kind == yaml.SequenceNode:
		content := make([]*yaml.Node, 0, len(new.Content))
		for i, nv := range new.Content {
			if i < len(old.Content) {
				content = append(content, mergeNode(old.Content[i], nv))
			} else {
				content = append(content, nv)
			}
		}
		out := *old
		out.Content = content
		if len(content) == 0 {
			out.Style = yaml.FlowStyle
		}
		return &out
	case old.Kind == yaml.ScalarNode && new.Kind == yaml.ScalarNode && scalarsEqual(old, new):
		return old
	}
	out := *new
	out.HeadComment, out.LineComment, out.FootComment = old.HeadComment, old.LineComment, old.FootComment
	return &out
}

// scalarsEqual compares two scalars by value, not spelling: 0x10 and 16,
// "a" and 'a' are the same.
func scalarsEqual(a, b *yaml.Node) bool {
	av, err := scalarValue(a, "")
	if err != nil {
		return false
	}
	bv, err := scalarValue(b, "")
	if err != nil {
		return false
	}
	aj, err1 := json.Marshal(av)
	bj, err2 := json.Marshal(bv)
	return err1 == nil && err2 == nil && bytes.Equal(aj, bj)
}

// encodeDocument renders a document with two-space indentation.
func encodeDocument(doc *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	return buf.Bytes(), nil
}

// mappingValue returns the value node of key in a mapping, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
