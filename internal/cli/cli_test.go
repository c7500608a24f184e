package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/decide"
)

func TestShownKeepsTheTerminalSafe(t *testing.T) {
	inert := decide.Inert("bad \"key\" <b>\x1b[31m\n")
	got := shown(inert)
	if strings.ContainsAny(got, "\x1b\n") {
		t.Fatalf("a control character reached the terminal: %q", got)
	}
	if !strings.Contains(got, `"key" <b>`) {
		t.Fatalf("quotes and brackets should read as themselves: %q", got)
	}
	// A raw escape in a hand-edited store file is not sent either.
	if got := shown("a\x1b]8;;http://x\x07b\u202e"); strings.ContainsAny(got, "\x1b\x07\u202e") {
		t.Fatalf("raw control or format characters reached the terminal: %q", got)
	}
}

func TestPrintWalls(t *testing.T) {
	w := wallsv1.AddonWall{ObjectMeta: metav1.ObjectMeta{Name: "kb"}}
	w.Status.Mode, w.Status.Reason, w.Status.Word = wallsv1.ModeNotWalled, wallsv1.ReasonOwnerChoice, "not walled (your choice)"
	w.Status.Conditions = []metav1.Condition{{Type: wallsv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "OwnerChoice"}}

	var out bytes.Buffer
	if err := printWalls(&out, []wallsv1.AddonWall{w}, outTable, decide.LangEN); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "ID") || !strings.Contains(out.String(), "not walled (your choice)") || !strings.Contains(out.String(), "True") {
		t.Fatalf("table: %s", out.String())
	}
	out.Reset()
	if err := printWalls(&out, []wallsv1.AddonWall{w}, outTable, decide.LangES); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "your choice") || !strings.Contains(out.String(), decide.Word(wallsv1.ReasonOwnerChoice, decide.LangES)) {
		t.Fatalf("--lang es must show the Spanish word: %s", out.String())
	}
	out.Reset()
	if err := printWalls(&out, []wallsv1.AddonWall{w}, outJSON, decide.LangEN); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Kind  string
		Items []map[string]any
	}
	if err := json.Unmarshal(out.Bytes(), &list); err != nil || list.Kind != "List" || len(list.Items) != 1 || list.Items[0]["kind"] != "AddonWall" {
		t.Fatalf("-o json must be a kubectl-style List: %v %s", err, out.String())
	}
	out.Reset()
	if err := printWalls(&out, nil, outJSON, decide.LangEN); err != nil || !strings.Contains(out.String(), `"items": []`) {
		t.Fatalf("an empty list must still have items: %v %s", err, out.String())
	}
}
