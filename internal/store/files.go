package store

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	dirMode  = 0o700
	fileMode = 0o600

	// maxFileSize bounds what the store reads from one object file. A
	// bigger file is a bad edit, not something to load into memory.
	maxFileSize = 1 << 20

	objectSuffix = ".yaml"
	// tempPrefix starts every temporary file; a leading dot keeps it out
	// of the object namespace (object names never start with a dot).
	tempPrefix = "."
)

type fileHash [sha256.Size]byte

func hashOf(b []byte) fileHash { return sha256.Sum256(b) }

// writeFileAtomic replaces path with data so that a reader (or a crash)
// sees either the old file or the new one, never a mix: a temp file in the
// same folder, fsync, rename over, fsync the folder. check runs after the
// data is durable and right before the rename, so that a caller can refuse
// to replace a file that changed under it; the window left is the rename
// itself.
func writeFileAtomic(path string, data []byte, check func() error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("create folder %s: %w", dir, err)
	}
	tmp, err := createTemp(dir, filepath.Base(path))
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	committed := false
	defer func() {
		if !committed {
			_ = os.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write %s: %w", tmpName, err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("fsync %s: %w", tmpName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmpName, err)
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("rename %s over %s: %w", tmpName, path, err)
	}
	committed = true
	return syncDir(dir)
}

// createTemp makes a fresh 0600 file beside base; O_EXCL so a name an
// attacker planted (or a leftover) is never reused.
func createTemp(dir, base string) (*os.File, error) {
	var rnd [8]byte
	for range 10 {
		if _, err := rand.Read(rnd[:]); err != nil {
			return nil, fmt.Errorf("random temp name: %w", err)
		}
		name := filepath.Join(dir, tempPrefix+base+".tmp-"+hex.EncodeToString(rnd[:]))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("create temp file in %s: %w", dir, err)
		}
	}
	return nil, fmt.Errorf("create temp file in %s: no free name after 10 tries", dir)
}

// ensureDir makes dir (and its parents) and narrows an existing one to
// 0700: the store holds the owner's add-on configuration, which no one
// else on the machine should read.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("create folder %s: %w", dir, err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("stat folder %s: %w", dir, err)
	}
	if st.Mode().Perm()&^dirMode != 0 {
		if err := os.Chmod(dir, dirMode); err != nil {
			return fmt.Errorf("narrow folder %s to 0700: %w", dir, err)
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open folder %s to fsync: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync folder %s: %w", dir, err)
	}
	return nil
}

// removeFile deletes an object file durably.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// readFileLimited reads a whole object file, refusing one over maxFileSize.
// A missing file returns (nil, os.ErrNotExist-wrapping error).
func readFileLimited(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d bytes: %w", path, maxFileSize, errTooLarge)
	}
	return data, nil
}

var errTooLarge = errors.New("file too large")

// openRegular opens an object file for reading, refusing anything but a
// regular file: a symlink could make the store read (and quote in its
// reports) a file outside the store, and a FIFO would block the reader.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link; the store reads regular files only", path)
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s); the store reads regular files only", path, st.Mode().Type())
	}
	return f, nil
}

// errUnsettled says a file is still being written; the caller tries again.
var errUnsettled = errors.New("file is still being written")

// readResult is one file's outcome in readSettled: its settled content,
// or os.ErrNotExist, errUnsettled or another error.
type readResult struct {
	data []byte
	err  error
}

// readSettled reads files that someone else may be writing. Editors and
// shell redirection truncate and then write, and a half-written YAML file
// often still parses, so one read is not enough: a file must have no
// writer (no open write descriptor, where the kernel can tell) and two
// reads gap apart must agree byte for byte. known, if set, short-cuts a
// file whose first read is content the caller already has (the store's
// own write coming back): no second read, no wait. The gap is slept once
// for the whole batch, so a thousand files cost one gap, not a thousand.
func readSettled(paths []string, gap time.Duration, known func(path string, data []byte) bool) map[string]readResult {
	out := make(map[string]readResult, len(paths))
	first := map[string][]byte{}
	for _, p := range paths {
		data, err := readIfNoWriter(p)
		switch {
		case err != nil:
			out[p] = readResult{err: err}
		case known != nil && known(p, data):
			out[p] = readResult{data: data}
		default:
			first[p] = data
		}
	}
	if len(first) == 0 {
		return out
	}
	time.Sleep(gap)
	for p, data := range first {
		again, err := readIfNoWriter(p)
		switch {
		case err != nil:
			out[p] = readResult{err: err}
		case !bytes.Equal(data, again):
			out[p] = readResult{err: errUnsettled}
		default:
			out[p] = readResult{data: again}
		}
	}
	return out
}

func readIfNoWriter(path string) ([]byte, error) {
	if open, err := openForWriting(path); err != nil {
		return nil, err
	} else if open {
		return nil, errUnsettled
	}
	return readFileLimited(path)
}

// isStaleTemp says whether a file name is one of the store's own temp
// files.
func isStaleTemp(base string) bool {
	target, _, ok := strings.Cut(strings.TrimPrefix(base, tempPrefix), ".tmp-")
	return ok && strings.HasPrefix(base, tempPrefix) && (strings.HasSuffix(target, objectSuffix) || target == rvFileName)
}

// isObjectFileName says whether a file name in a kind folder names an
// object: "<name>.yaml", not hidden (temp files, editor swap files).
func isObjectFileName(base string) bool {
	return strings.HasSuffix(base, objectSuffix) && !strings.HasPrefix(base, ".") &&
		len(base) > len(objectSuffix)
}
