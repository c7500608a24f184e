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

// pathNode is one step of a path; a path is its last step, linked to its
// parent, so a child costs one small allocation whatever its depth (a copied
// slice per member would cost O(depth) each, and a 4 MiB document at depth
// 64 has hundreds of thousands of members). The nil path is the document.
type pathNode struct {
	parent *pathNode
	s      seg
	n      int
}

type path = *pathNode

func (p *pathNode) depth() int {
	if p == nil {
		return 0
	}
	return p.n
}

func (p *pathNode) with(s seg) path { return &pathNode{parent: p, s: s, n: p.depth() + 1} }

func (p *pathNode) field(k string) path  { return p.with(seg{kind: segField, key: k}) }
func (p *pathNode) mapKey(k string) path { return p.with(seg{kind: segMapKey, key: k}) }
func (p *pathNode) index(i int) path     { return p.with(seg{kind: segIndex, idx: i}) }

// segs returns the steps from the document down.
func (p *pathNode) segs() []seg {
	out := make([]seg, p.depth())
	for q := p; q != nil; q = q.parent {
		out[q.n-1] = q.s
	}
	return out
}

// maxKeyShown keeps a hostile megabyte-long key out of error messages.
const maxKeyShown = 64

func (p *pathNode) String() string {
	var b strings.Builder
	for i, s := range p.segs() {
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
