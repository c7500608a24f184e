package decide

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	v1alpha1 "github.com/addonwall/addonwall/api/v1alpha1"
)

// modeReasons reads the api's mode reasons from the source, so a reason
// added there without a word here fails this test.
func modeReasons(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("..", "..", "api", "v1alpha1", "condition_types.go"), nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST || g.Doc == nil || !strings.HasPrefix(g.Doc.Text(), "Reasons for an AddonWall's mode") {
			continue
		}
		for _, s := range g.Specs {
			for _, v := range s.(*ast.ValueSpec).Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok {
					t.Fatalf("mode reason %v is not a literal", v)
				}
				r, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, r)
			}
		}
	}
	if len(out) < 18 {
		t.Fatalf("found only %d mode reasons in condition_types.go: %v", len(out), out)
	}
	return out
}

var offReasons = []string{
	v1alpha1.ReasonWallFailed, v1alpha1.ReasonBubblewrapUnusable, v1alpha1.ReasonInvalidInput,
	v1alpha1.ReasonPlanFailed, v1alpha1.ReasonSeccompFailed, v1alpha1.ReasonPackagesNotReady,
	v1alpha1.ReasonWallNotVerified, v1alpha1.ReasonStopped, v1alpha1.ReasonOverLimit,
}

func TestEveryModeReasonHasWordsAndCards(t *testing.T) {
	for _, r := range modeReasons(t) {
		for _, l := range Langs {
			if Word(r, l) == "" {
				t.Errorf("%s has no %s word", r, l)
			}
			c := Explain(r, l)
			if c.What == "" || c.Do == "" {
				t.Errorf("%s has no %s card: %+v", r, l, c)
			}
		}
	}
	// And nothing in the tables is a reason the api does not have.
	known := modeReasons(t)
	for _, l := range Langs {
		for r := range words[l] {
			if !slices.Contains(known, r) {
				t.Errorf("%s word for %q, which is not an api mode reason", l, r)
			}
		}
		for r := range cards[l] {
			if !slices.Contains(known, r) {
				t.Errorf("%s card for %q, which is not an api mode reason", l, r)
			}
		}
	}
}

// The English words are the seed's table, character for character.
func TestEnglishWordsAreTheSeeds(t *testing.T) {
	seed := map[string]string{
		"Walled":             "walled",
		"SharesCrowDatabase": "not walled: shares Crow's database",
		"UsesAllStorage":     "not walled: can use all of Crow's storage",
		"OwnerChoice":        "not walled (your choice)",
		"HostDefaultOff":     "not walled (switched off for this computer)",
		"KillSwitch":         "not walled (switched off by the operator)",
		"NoBubblewrap":       "not walled on this computer; docker reachable",
		"ApprovedCommands":   "not walled (approved commands)",
		"WallFailed":         "off: it could not run inside its wall",
		"Stopped":            "off: it stopped",
	}
	for r, w := range seed {
		if got := Word(r, LangEN); got != w {
			t.Errorf("Word(%s) = %q, want the seed's %q", r, got, w)
		}
	}
	titles := map[Key]string{
		TitleSomeNotWalled:   "Some add-ons are not walled",
		TitleWallsNowOn:      "Add-ons now run inside walls on this computer",
		TitleSettingsChanged: "Add-on wall settings were changed outside Crow",
		LineNotCovered:       "Bots' and satellites' copies of add-ons, and approved data backends, are not walled.",
		ReachSharesDB:        "read Crow's stored keys and change its database",
	}
	for k, w := range titles {
		if got := Text(k, LangEN); got != w {
			t.Errorf("Text(%s) = %q, want the seed's %q", k, got, w)
		}
	}
}

func TestOffReasonsUseTheTwoOffWords(t *testing.T) {
	for _, l := range Langs {
		offWords := []string{Word(v1alpha1.ReasonWallFailed, l), Word(v1alpha1.ReasonStopped, l)}
		if offWords[0] == offWords[1] {
			t.Fatalf("%s: the two off words are the same", l)
		}
		for _, r := range modeReasons(t) {
			isOff := slices.Contains(offReasons, r)
			if got := slices.Contains(offWords, Word(r, l)); got != isOff {
				t.Errorf("%s: %s uses an off word: %v, is an off reason: %v", l, r, got, isOff)
			}
		}
		// The words that are not off tell the reasons apart.
		seen := map[string]string{}
		for _, r := range modeReasons(t) {
			if slices.Contains(offReasons, r) {
				continue
			}
			if prev, dup := seen[Word(r, l)]; dup {
				t.Errorf("%s: %s and %s share the word %q", l, prev, r, Word(r, l))
			}
			seen[Word(r, l)] = r
		}
	}
}

var verb = regexp.MustCompile(`%[-+# 0-9.*]*[a-zA-Z%]|%!|\{\{|\}\}`)

func checkText(t *testing.T, where, s string) {
	t.Helper()
	switch {
	case s == "":
		t.Errorf("%s is empty", where)
	case strings.TrimSpace(s) != s:
		t.Errorf("%s has leading or trailing space: %q", where, s)
	case verb.MatchString(s):
		t.Errorf("%s has a leftover format verb: %q", where, s)
	case strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == '\uFFFD' }):
		t.Errorf("%s has a control character: %q", where, s)
	case strings.Contains(s, "  "):
		t.Errorf("%s has a double space: %q", where, s)
	}
}

func TestBothLanguagesHaveEveryKey(t *testing.T) {
	enWords, esWords := slices.Sorted(maps.Keys(words[LangEN])), slices.Sorted(maps.Keys(words[LangES]))
	if !slices.Equal(enWords, esWords) {
		t.Errorf("word keys differ:\n en %v\n es %v", enWords, esWords)
	}
	enCards, esCards := slices.Sorted(maps.Keys(cards[LangEN])), slices.Sorted(maps.Keys(cards[LangES]))
	if !slices.Equal(enCards, esCards) {
		t.Errorf("card keys differ:\n en %v\n es %v", enCards, esCards)
	}
	enTexts, esTexts := slices.Sorted(maps.Keys(texts[LangEN])), slices.Sorted(maps.Keys(texts[LangES]))
	if !slices.Equal(enTexts, esTexts) {
		t.Errorf("text keys differ:\n en %v\n es %v", enTexts, esTexts)
	}
	allKeys := []Key{TitleSomeNotWalled, TitleWallsNowOn, TitleKillSwitch, TitleSettingsChanged,
		LineNotWalledIntro, LineKillSwitchSet, LineKillSwitchNotSet, LineWallsNowOnIntro, LineKillSwitchIntro,
		LineSettingsChanged, LineNotCovered, LineNoAddons, ReachSharesDB, ReachAllStorage,
		ButtonRunWithoutWall, ButtonWallAgain}
	if len(allKeys) != len(enTexts) {
		t.Errorf("%d exported keys, %d texts", len(allKeys), len(enTexts))
	}
	for _, l := range Langs {
		for r, w := range words[l] {
			checkText(t, string(l)+" word "+r, w)
		}
		for r, c := range cards[l] {
			checkText(t, string(l)+" card "+r+" what", c.What)
			checkText(t, string(l)+" card "+r+" do", c.Do)
		}
		for _, k := range allKeys {
			checkText(t, string(l)+" text "+string(k), Text(k, l))
		}
		w := reachText[l]
		for i, s := range []string{w.network, w.none, w.internet, w.hosts, w.and, w.files, w.ownData, w.read, w.write, w.oauth, w.dotenv, w.state, w.doors, w.also} {
			if strings.TrimSpace(s) == "" || verb.MatchString(s) {
				t.Errorf("%s reach word %d is %q", l, i, s)
			}
		}
	}
	// Spanish is a translation, not a copy: no Spanish sentence equals its
	// English one (the names in them are the same, the sentences are not).
	for r, w := range words[LangES] {
		if w == words[LangEN][r] {
			t.Errorf("es word for %s is the English one", r)
		}
	}
	for k, s := range texts[LangES] {
		if s == texts[LangEN][k] {
			t.Errorf("es text %s is the English one", k)
		}
	}
}

// The card texts name the card's buttons by the labels the buttons have.
func TestCardsNameTheButtons(t *testing.T) {
	for _, l := range Langs {
		run, again := Text(ButtonRunWithoutWall, l), Text(ButtonWallAgain, l)
		if !strings.Contains(Explain(v1alpha1.ReasonOwnerChoice, l).What, run) ||
			!strings.Contains(Explain(v1alpha1.ReasonOwnerChoice, l).Do, again) ||
			!strings.Contains(Explain(v1alpha1.ReasonWallFailed, l).Do, run) {
			t.Errorf("%s cards do not name the buttons %q and %q", l, run, again)
		}
	}
}

func TestUnknownsGiveNothing(t *testing.T) {
	if Word("Sometimes", LangEN) != "" || Explain("Sometimes", LangES) != (Card{}) || Text("nope", LangEN) != "" {
		t.Fatal("an unknown reason or key got text")
	}
	// A language that is not known reads as English (positive control: the
	// same reason has a word).
	if Word(v1alpha1.ReasonWalled, "fr") != "walled" || Text(TitleWallsNowOn, "") != Text(TitleWallsNowOn, LangEN) {
		t.Fatal("an unknown language did not read as English")
	}
}

func TestParseLang(t *testing.T) {
	good := map[string]Lang{"en": LangEN, "es": LangES, "ES": LangES, "es-MX": LangES, "es_ES": LangES, "en-GB": LangEN}
	for in, want := range good {
		if got, err := ParseLang(in); err != nil || got != want {
			t.Errorf("ParseLang(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "fr", "-es", "english", "e", "es MX", "español"} {
		if got, err := ParseLang(in); err == nil {
			t.Errorf("ParseLang(%q) = %q, want an error", in, got)
		} else if !strings.Contains(err.Error(), "en, es") {
			t.Errorf("ParseLang(%q) error %q does not name the languages", in, err)
		}
	}
}
