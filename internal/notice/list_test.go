package notice

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeNotices(t *testing.T, content string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, FileDir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, FileDir, FileName), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

const goodLine = `{"time":"2026-05-01T12:00:00Z","kind":"wallsNowOn","title":"Add-ons now run inside walls on this computer","body":"a\nb","lang":"en"}`

func TestListNoFile(t *testing.T) {
	got, err := List(t.TempDir())
	if err != nil || got != nil {
		t.Fatalf("List of an empty home = %v, %v", got, err)
	}
}

func TestListStrict(t *testing.T) {
	home := writeNotices(t, goodLine+"\n"+strings.Replace(goodLine, `,"lang":"en"`, "", 1)+"\n")
	got, err := List(home)
	if err != nil || len(got) != 2 {
		t.Fatalf("positive control: List = %v, %v", got, err)
	}
	want := Notice{Time: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), Kind: KindWallsNowOn, Title: "Add-ons now run inside walls on this computer", Body: "a\nb", Lang: "en"}
	if !got[0].Time.Equal(want.Time) || got[0].Kind != want.Kind || got[0].Title != want.Title || got[0].Body != want.Body || got[0].Lang != "en" || got[1].Lang != "" {
		t.Fatalf("List = %+v", got)
	}

	bad := map[string]string{
		"unknown key":          `{"time":"2026-05-01T12:00:00Z","kind":"wallsNowOn","title":"t","extra":"x"}`,
		"case-variant key":     `{"time":"2026-05-01T12:00:00Z","kind":"wallsNowOn","Title":"t"}`,
		"repeated key":         `{"time":"2026-05-01T12:00:00Z","kind":"wallsNowOn","title":"t","title":"u"}`,
		"number value":         `{"time":"2026-05-01T12:00:00Z","kind":"wallsNowOn","title":1}`,
		"nested value":         `{"time":"2026-05-01T12:00:00Z","kind":"wallsNowOn","title":{"a":"b"}}`,
		"trailing data":        goodLine + ` {}`,
		"not an object":        `["time"]`,
		"missing title":        `{"time":"2026-05-01T12:00:00Z","kind":"wallsNowOn"}`,
		"bad time":             `{"time":"yesterday","kind":"wallsNowOn","title":"t"}`,
		"unknown kind":         `{"time":"2026-05-01T12:00:00Z","kind":"party","title":"t"}`,
		"escape in title":      `{"time":"2026-05-01T12:00:00Z","kind":"wallsNowOn","title":"red\u001b[31m"}`,
		"carriage return body": `{"time":"2026-05-01T12:00:00Z","kind":"wallsNowOn","title":"t","body":"a\rb"}`,
		"bidi in body":         `{"time":"2026-05-01T12:00:00Z","kind":"wallsNowOn","title":"t","body":"a\u202eb"}`,
		"unknown lang":         `{"time":"2026-05-01T12:00:00Z","kind":"wallsNowOn","title":"t","lang":"fr"}`,
		"non-canonical lang":   `{"time":"2026-05-01T12:00:00Z","kind":"wallsNowOn","title":"t","lang":"es-MX"}`,
		"blank line":           ``,
		"truncated":            `{"time":"2026-05-01T12:00:00Z","kind":"wallsNowOn","ti`,
	}
	for name, line := range bad {
		t.Run(name, func(t *testing.T) {
			home := writeNotices(t, goodLine+"\n"+line+"\n"+goodLine+"\n")
			_, err := List(home)
			if err == nil {
				t.Fatalf("List accepted %q", line)
			}
			if !strings.Contains(err.Error(), filepath.Join(home, FileDir, FileName)+" line 2:") {
				t.Fatalf("error %q does not name the file and line 2", err)
			}
		})
	}
}

func TestListRefusesASymlink(t *testing.T) {
	target := writeNotices(t, goodLine+"\n")
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, FileDir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(target, FileDir, FileName), filepath.Join(home, FileDir, FileName)); err != nil {
		t.Fatal(err)
	}
	if _, err := List(home); err == nil {
		t.Fatal("List followed a symlinked notices file")
	}
	// Positive control: the target itself reads.
	if got, err := List(target); err != nil || len(got) != 1 {
		t.Fatalf("List(target) = %v, %v", got, err)
	}
}

func TestListRefusesAnOverlongLine(t *testing.T) {
	long := strings.Replace(goodLine, `"body":"a\nb"`, `"body":"`+strings.Repeat("x", maxLineBytes)+`"`, 1)
	if _, err := List(writeNotices(t, long+"\n")); err == nil {
		t.Fatal("List accepted a line over the limit")
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add([]byte(goodLine))
	f.Add([]byte(`{"time":"2026-05-01T12:00:00Z","kind":"killSwitch","title":"t","title":"t"}`))
	f.Add([]byte(`{"time":"2026-05-01T12:00:00.5+02:00","kind":"settingsChanged","title":"\u00e9","lang":"es"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseLine(b)
		if err != nil {
			return
		}
		if err := check(n); err != nil {
			t.Fatalf("parseLine accepted %q, which fails check: %v", b, err)
		}
		// What the writer writes, the reader reads back the same.
		out, err := json.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		m, err := parseLine(out)
		if err != nil {
			t.Fatalf("round trip of %q: %v", out, err)
		}
		if !m.Time.Equal(n.Time) || m.Kind != n.Kind || m.Title != n.Title || m.Body != n.Body || m.Lang != n.Lang {
			t.Fatalf("round trip changed %+v to %+v", n, m)
		}
	})
}
