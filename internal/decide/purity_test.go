package decide

import (
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// decide is pure: it may not import anything that reads the world, so the
// decision cannot consult a data folder, crow.db or a child environment
// (CROW-NOTES §6, items 7 and 8) even by accident.
func TestDecideImportsNothingThatReadsTheWorld(t *testing.T) {
	allowed := []string{"fmt", "strings", "unicode", "unicode/utf8", "github.com/addonwall/addonwall/api/v1alpha1"}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !slices.Contains(allowed, p) {
				t.Errorf("%s imports %q; decide must stay pure", e.Name(), p)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}
