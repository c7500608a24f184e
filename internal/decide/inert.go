package decide

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// InertMaxRunes is how much of a piece of outside text Inert keeps.
const InertMaxRunes = 200

// Inert makes text that came from a file (an add-on id, a name, a path, a
// probe message) safe to place in a status line, a bell note, a card or a
// terminal: it is shown, never interpreted. Control and format characters
// (newlines, ANSI escapes, bidi overrides, zero-width characters, line
// separators) and invalid UTF-8 become visible backslash escapes, a
// backslash is doubled so an escape cannot be forged, and the HTML
// specials become entities, so a surface that renders HTML shows the
// characters rather than running them. Text longer than InertMaxRunes is
// cut and ends with "…".
func Inert(s string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		if n == InertMaxRunes {
			b.WriteString("…")
			break
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
			i++
			n++
			continue
		}
		i += size
		n++
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&#34;")
		case '\'':
			b.WriteString("&#39;")
		default:
			switch {
			case r < 0x80 && unicode.IsControl(r):
				fmt.Fprintf(&b, `\x%02x`, r)
			case unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs) || isNoncharacter(r):
				if r > 0xFFFF {
					fmt.Fprintf(&b, `\U%08x`, r)
				} else {
					fmt.Fprintf(&b, `\u%04x`, r)
				}
			default:
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

func isNoncharacter(r rune) bool {
	return (r >= 0xFDD0 && r <= 0xFDEF) || r&0xFFFE == 0xFFFE
}
