package decide

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestInert(t *testing.T) {
	tests := []struct{ in, want string }{
		{"funkwhale", "funkwhale"},
		{"café-ñ 音楽", "café-ñ 音楽"},
		{"a\nb\r\tc", `a\nb\r\tc`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"},
		{`"quoted" & 'single'`, "&#34;quoted&#34; &amp; &#39;single&#39;"},
		{`back\slash`, `back\\slash`},
		{"evil\u202egnp.exe", `evil\u202egnp.exe`},
		{"zero\u200bwidth", `zero\u200bwidth`},
		{"line\u2028sep", `line\u2028sep`},
		{"c1\u009bcsi", `c1\u009bcsi`},
		{"del\x7f", `del\x7f`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"nul\x00", `nul\x00`},
		{"tag\U000e0041", `tag\U000e0041`},
		{"nonchar\uffff", `nonchar\uffff`},
	}
	for _, tt := range tests {
		if got := Inert(tt.in); got != tt.want {
			t.Errorf("Inert(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestInertCuts(t *testing.T) {
	long := strings.Repeat("é", InertMaxRunes+50)
	got := Inert(long)
	if utf8.RuneCountInString(got) != InertMaxRunes+1 || !strings.HasSuffix(got, "…") {
		t.Fatalf("Inert of %d runes gave %d runes", InertMaxRunes+50, utf8.RuneCountInString(got))
	}
	exact := strings.Repeat("a", InertMaxRunes)
	if Inert(exact) != exact {
		t.Fatal("text of exactly the limit was cut")
	}
}

func checkInert(t *testing.T, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("Inert(%q) = %q is not valid UTF-8", in, out)
	}
	for i, r := range out {
		if unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cs) || isNoncharacter(r) {
			t.Fatalf("Inert(%q) = %q keeps %U", in, out, r)
		}
		switch r {
		case '<', '>', '"', '\'':
			t.Fatalf("Inert(%q) = %q keeps %q", in, out, r)
		case '&':
			rest := out[i:]
			if !strings.HasPrefix(rest, "&amp;") && !strings.HasPrefix(rest, "&lt;") && !strings.HasPrefix(rest, "&gt;") &&
				!strings.HasPrefix(rest, "&#34;") && !strings.HasPrefix(rest, "&#39;") {
				t.Fatalf("Inert(%q) = %q has a bare &", in, out)
			}
		}
	}
}

func FuzzInert(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]8;;http://x\x07link", "<a href='x'>", "\xed\xa0\x80", "a\u2066b", "\\x41"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkInert(t, s, Inert(s))
	})
}
