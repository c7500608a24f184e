package crowhome

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wantFileError checks that err is a *FileError for file with exactly key
// and a message containing msg.
func wantFileError(t *testing.T, err error, file, key, msg string) *FileError {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error at %s %s (%q), got none", file, key, msg)
	}
	var fe *FileError
	if !errors.As(err, &fe) {
		t.Fatalf("want a *FileError, got %T: %v", err, err)
	}
	if fe.File != file {
		t.Errorf("error names file %q, want %q (%v)", fe.File, file, err)
	}
	if fe.Key != key {
		t.Errorf("error names key %q, want %q (%v)", fe.Key, key, err)
	}
	if !strings.Contains(fe.Msg, msg) {
		t.Errorf("error message %q does not say %q", fe.Msg, msg)
	}
	if !strings.HasPrefix(err.Error(), file+": ") {
		t.Errorf("Error() %q does not start with the file", err.Error())
	}
	return fe
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeFile(t *testing.T, dir, name string, data []byte, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		t.Fatal(err)
	}
	return p
}
