package crowhome

import (
	"strconv"
	"strings"
)

type segKind uint8

const (
	segField  segKind = iota // a key the format defines: .command
	segMapKey                // a key the owner chose (an id, an env name): ["kb"]
	segIndex                 // a list position: [2]
)

type seg struct {
	kind segKind
	key  string
	idx  int
}

// path locates a value inside a document. It is copied on every step so a
// child never shares (and overwrites) its parent's backing array.
type path []seg

func (p path) with(s seg) path {
	np := make(path, len(p), len(p)+1)
	copy(np, p)
	return append(np, s)
}

func (p path) field(k string) path  { return p.with(seg{kind: segField, key: k}) }
func (p path) mapKey(k string) path { return p.with(seg{kind: segMapKey, key: k}) }
func (p path) index(i int) path     { return p.with(seg{kind: segIndex, idx: i}) }

// maxKeyShown keeps a hostile megabyte-long key out of error messages.
const maxKeyShown = 64

func (p path) String() string {
	var b strings.Builder
	for i, s := range p {
		switch {
		case s.kind == segIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
		case s.kind == segField && isIdent(s.key):
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		default:
			b.WriteByte('[')
			b.WriteString(quoteShort(s.key))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// quoteShort quotes s for display: control, bidi and other unprintable
// characters come out escaped, and long strings are cut.
func quoteShort(s string) string {
	if len(s) > maxKeyShown {
		cut := maxKeyShown
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func isIdent(s string) bool {
	if s == "" || len(s) > maxKeyShown {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
