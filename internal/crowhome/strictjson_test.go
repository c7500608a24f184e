package crowhome

import (
	"strings"
	"testing"
)

func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

func TestStrictDecoder(t *testing.T) {
	const f = "t.json"
	exactly4MiB := `{"a":"` + strings.Repeat("x", MaxFileSize-len(`{"a":""}`)) + `"}`
	deepKey := strings.TrimSuffix(strings.Repeat("a.", MaxDepth), ".")
	cases := []struct {
		name string
		doc  string
		key  string // "" with ok=false: a whole-document error
		msg  string
		ok   bool
	}{
		{name: "plain object", doc: `{"a": 1, "b": [true, null, "x"], "c": {"d": 1e1000}}`, ok: true},
		{name: "different keys of different case letters", doc: `{"ab": 1, "aB2": 2}`, ok: true},
		{name: "duplicate key", doc: `{"a": 1, "a": 2}`, key: "a", msg: "duplicate key"},
		{name: "duplicate nested key", doc: `{"a": {"b": 1, "b": 1}}`, key: "a.b", msg: "duplicate key"},
		{name: "case-variant key", doc: `{"command": "x", "Command": "y"}`, key: "Command", msg: "letter case"},
		{name: "Kelvin sign folds to k", doc: "{\"k\": 1, \"\u212a\": 2}", key: `["` + "\u212a" + `"]`, msg: "letter case"},
		{name: "trailing garbage", doc: `{"a": 1} x`, msg: "data after the end"},
		{name: "second document", doc: `{"a": 1} {}`, msg: "data after the end"},
		{name: "trailing white space is fine", doc: "{\"a\": 1}\n\t \n", ok: true},
		{name: "raw NUL in a string", doc: "{\"a\": \"x\x00y\"}", key: "a", msg: "NUL byte"},
		{name: "raw NUL after the document", doc: "{\"a\": 1}\x00", msg: "NUL byte"},
		{name: "escaped NUL in a value", doc: `{"a": "x\u0000--bind\u0000/"}`, key: "a", msg: "NUL character"},
		{name: "escaped NUL in a key", doc: `{"a\u0000b": 1}`, key: `["a\x00b"]`, msg: "NUL character in its key"},
		{name: "bytes that are not UTF-8", doc: "{\"a\": \"\xff\xfe\"}", key: "a", msg: "not UTF-8"},
		{name: "lone high surrogate", doc: `{"a": "x\ud800y"}`, key: "a", msg: "surrogate"},
		{name: "lone low surrogate", doc: `{"a": "\udc00"}`, key: "a", msg: "surrogate"},
		{name: "high surrogate at the end", doc: `{"a": "\ud83d"}`, key: "a", msg: "surrogate"},
		{name: "surrogate pair is fine", doc: `{"a": "\ud83d\ude00 \u00e9"}`, ok: true},
		{name: "escaped backslash before u is text", doc: `{"a": "\\ud800"}`, ok: true},
		{name: "literal U+FFFD is fine", doc: "{\"a\": \"\uFFFD\\ufffd\"}", ok: true},
		{name: "exactly 4 MiB", doc: exactly4MiB, ok: true},
		{name: "4 MiB and one byte", doc: exactly4MiB + " ", msg: "larger than 4194304 bytes"},
		{name: "depth 64", doc: nested(MaxDepth), ok: true},
		{name: "depth 65", doc: nested(MaxDepth + 1), key: deepKey, msg: "deeper than 64"},
		{name: "lists count as depth", doc: strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), key: strings.Repeat("[0]", MaxDepth), msg: "deeper than 64"},
		{name: "truncated", doc: `{"a": [1, 2`, key: "a", msg: "ends before"},
		{name: "empty", doc: "", msg: "empty"},
		{name: "only white space", doc: "  \n", msg: "empty"},
		{name: "not JSON", doc: `{a: 1}`, msg: "not valid JSON"},
		{name: "byte order mark", doc: "\xef\xbb\xbf{}", msg: "not valid JSON"},
		{name: "too many values", doc: "[" + strings.Repeat("0,", maxValues) + "0]", key: "[65535]", msg: "more than 65536 values"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeStrict(f, []byte(tc.doc), nil)
			if tc.ok {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			wantFileError(t, err, f, tc.key, tc.msg)
		})
	}
}

func TestPathRendering(t *testing.T) {
	p := path(nil).mapKey("kb").field("args").index(2)
	if got := p.String(); got != `["kb"].args[2]` {
		t.Errorf("got %s", got)
	}
	p = path(nil).field("sandbox").field("x-y").field("\u202eevil")
	if got := p.String(); got != `sandbox["x-y"]["\u202eevil"]` {
		t.Errorf("bidi and dashes must be quoted and escaped, got %s", got)
	}
	long := path(nil).field(strings.Repeat("é", 100)).String()
	if len(long) > 3*maxKeyShown || !strings.HasSuffix(long, "…\"]") && !strings.HasSuffix(long, "…]") {
		t.Errorf("long keys must be cut, got %d bytes: %s", len(long), long)
	}
}

func TestFoldKey(t *testing.T) {
	same := [][2]string{{"Command", "command"}, {"COMMAND", "command"}, {"k", "\u212a"}, {"ß", "ẞ"}}
	for _, p := range same {
		if foldKey(p[0]) != foldKey(p[1]) {
			t.Errorf("%q and %q must fold together", p[0], p[1])
		}
	}
	differ := [][2]string{{"command", "commands"}, {"a_b", "a-b"}, {"i", "ı"}}
	for _, p := range differ {
		if foldKey(p[0]) == foldKey(p[1]) {
			t.Errorf("%q and %q must not fold together", p[0], p[1])
		}
	}
}
