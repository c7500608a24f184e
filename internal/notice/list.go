package notice

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/addonwall/addonwall/internal/decide"
)

// Limits of the notices file a reader accepts.
const (
	maxFileBytes = 16 << 20
	maxLineBytes = 1 << 20
)

// List reads <crowHome>/addonwall/notices.jsonl back, oldest first, for
// `addonwall notices`. No file means no notes. The reader is strict: a line
// that is not one JSON object with exactly our keys (time, kind, title,
// body, lang), spelled exactly and each once, or whose text holds control
// characters, is an error naming the file and the line — text that reaches
// a terminal from here must be as inert as when it was written.
func List(crowHome string) ([]Notice, error) {
	path := filepath.Join(crowHome, FileDir, FileName)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > maxFileBytes {
		return nil, fmt.Errorf("%s is %d bytes, over the %d a notices file may hold; move it aside", path, st.Size(), maxFileBytes)
	}
	if err := unix.Flock(fd, unix.LOCK_SH); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	sc := bufio.NewScanner(io.LimitReader(f, maxFileBytes+1))
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	var out []Notice
	for line := 1; sc.Scan(); line++ {
		n, err := parseLine(sc.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
		out = append(out, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// parseLine reads one object token by token, because encoding/json would
// accept "Title" for "title" and let a repeated key win silently.
func parseLine(b []byte) (Notice, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return Notice{}, errors.New("not a JSON object")
	}
	vals := map[string]string{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return Notice{}, err
		}
		k, ok := kt.(string)
		if !ok {
			return Notice{}, errors.New("object key is not a string")
		}
		if !slices.Contains([]string{"time", "kind", "title", "body", "lang"}, k) {
			return Notice{}, fmt.Errorf("key %q is not one of time, kind, title, body, lang", k)
		}
		if _, dup := vals[k]; dup {
			return Notice{}, fmt.Errorf("key %q appears twice", k)
		}
		vt, err := dec.Token()
		if err != nil {
			return Notice{}, fmt.Errorf("key %q: %w", k, err)
		}
		v, ok := vt.(string)
		if !ok {
			return Notice{}, fmt.Errorf("key %q is not a string", k)
		}
		vals[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return Notice{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Notice{}, errors.New("trailing data after the object")
	}
	for _, k := range []string{"time", "kind", "title"} {
		if vals[k] == "" {
			return Notice{}, fmt.Errorf("key %q is missing or empty", k)
		}
	}
	tm, err := time.Parse(time.RFC3339Nano, vals["time"])
	if err != nil {
		return Notice{}, fmt.Errorf("key \"time\": %w", err)
	}
	n := Notice{Time: tm, Kind: Kind(vals["kind"]), Title: vals["title"], Body: vals["body"], Lang: vals["lang"]}
	if n.Lang != "" {
		if l, err := decide.ParseLang(n.Lang); err != nil || string(l) != n.Lang {
			return Notice{}, fmt.Errorf("key \"lang\": %q is not en or es", n.Lang)
		}
	}
	if err := check(n); err != nil {
		return Notice{}, err
	}
	return n, nil
}
