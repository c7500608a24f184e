package crowhome

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// SetChoice records the owner's choice for one add-on in addon-walls.json
// and returns the hex sha256 of the bytes now in the file.
//
// It is the one writer of the file: it takes an exclusive flock on
// .addon-walls.json.lock beside it, re-reads the file under the lock, changes
// only this add-on's line and writes the whole file atomically (a 0600 temp
// file in the same folder, fsync, rename, fsync of the folder). Everything
// else in the file is kept. It refuses to write when the path is a symlink
// or not a regular file, or when the current file is not valid — an owner's
// broken edit is reported, never overwritten. Choosing what is already
// chosen writes nothing and keeps the earlier changedAt.
//
// When the returned hash is not empty the file holds exactly those bytes,
// even if err reports that the folder could not be synced afterwards.
func SetChoice(file, id string, choice Choice, now time.Time) (string, error) {
	if err := ValidID(id); err != nil {
		return "", fileErr(file, path(nil).field("addons").mapKey(id), "%s; nothing was written", err.Error())
	}
	if !choice.valid() {
		return "", fileErr(file, path(nil).field("addons").mapKey(id).field("choice"), "must be \"walled\" or \"notWalled\", not %s; nothing was written", quoteShort(string(choice)))
	}
	return updateWalls(file, func(w *Walls) bool {
		if cur, ok := w.Addons[id]; ok && cur.Choice == choice {
			return false
		}
		w.Addons[id] = AddonChoice{Choice: choice, ChangedAt: now}
		return true
	})
}

// MarkAnnounced records that a once-per-computer notice went out, under the
// same lock and atomic write as SetChoice, and returns the file's sha256.
// Call it only after the notice was delivered. A marker already set is
// kept as it is (the first time is the one that counts) and nothing is
// written.
func MarkAnnounced(file string, key Announcement, now time.Time) (string, error) {
	if !key.valid() {
		return "", fileErr(file, path(nil).field("announced"), "has no marker %s; nothing was written", quoteShort(string(key)))
	}
	return updateWalls(file, func(w *Walls) bool {
		if _, ok := w.Announced[key]; ok {
			return false
		}
		w.Announced[key] = now
		return true
	})
}

// Fingerprint returns the hex sha256 of addon-walls.json as it is now, or ""
// when there is no file. A symlink at the path is an error, as in ReadWalls.
func Fingerprint(file string) (string, error) {
	data, err := readRegular(file, true)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return sha256Hex(data), nil
}

func wallsLockPath(file string) string {
	return filepath.Join(filepath.Dir(file), "."+filepath.Base(file)+".lock")
}

func wallsTempPrefix(file string) string { return "." + filepath.Base(file) + ".tmp-" }

func updateWalls(file string, change func(*Walls) bool) (string, error) {
	unlock, err := lockExclusive(file, wallsLockPath(file))
	if err != nil {
		return "", err
	}
	defer unlock()

	// Only a writer holding the lock makes temp files, so any left now were
	// left by a writer that died before its rename.
	removeStaleTemps(file)

	w, err := ReadWalls(file)
	if err != nil {
		var fe *FileError
		if errors.As(err, &fe) {
			return "", &FileError{File: fe.File, Key: fe.Key, Msg: fe.Msg + "; nothing was written, the file is left as it is", Err: fe.Err}
		}
		return "", err
	}
	if !change(w) {
		return w.SHA256, nil
	}
	out, err := encodeWalls(w)
	if err != nil {
		return "", &FileError{File: file, Msg: "could not be encoded: " + err.Error() + "; nothing was written", Err: err}
	}
	if err := writeAtomic(file, out); err != nil {
		return "", err
	}
	sum := sha256Hex(out)
	if err := syncDir(filepath.Dir(file)); err != nil {
		return sum, &FileError{File: file, Msg: "was written, but its folder could not be synced to disk: " + err.Error(), Err: err}
	}
	return sum, nil
}

type wallsDoc struct {
	Version   int                  `json:"version"`
	Addons    map[string]choiceDoc `json:"addons"`
	Announced map[string]string    `json:"announced"`
}

type choiceDoc struct {
	Choice    Choice `json:"choice"`
	ChangedAt string `json:"changedAt"`
}

// encodeWalls writes the one canonical form: sorted keys, two-space indent,
// RFC 3339 times, a final newline.
func encodeWalls(w *Walls) ([]byte, error) {
	doc := wallsDoc{Version: wallsVersion, Addons: map[string]choiceDoc{}, Announced: map[string]string{}}
	for id, c := range w.Addons {
		doc.Addons[id] = choiceDoc{Choice: c.Choice, ChangedAt: formatTime(c.ChangedAt)}
	}
	for k, t := range w.Announced {
		doc.Announced[string(k)] = formatTime(t)
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// formatTime keeps a time's own offset (an owner's "+02:00" stays) and its
// fraction of a second, if it had one.
func formatTime(t time.Time) string { return t.Format(time.RFC3339Nano) }

// lockExclusive takes an exclusive flock on lockFile, creating it 0600. A
// symlink or anything but a regular file there is refused.
func lockExclusive(file, lockFile string) (func(), error) {
	fd, err := openRetry(lockFile, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0o600)
	if err != nil {
		msg := fmt.Sprintf("could not be locked: opening %s: %v; nothing was written", lockFile, err)
		if errors.Is(err, unix.ELOOP) {
			msg = fmt.Sprintf("could not be locked: %s is a symlink; nothing was written", lockFile)
		}
		return nil, &FileError{File: file, Msg: msg, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		_ = unix.Close(fd)
		return nil, &FileError{File: file, Msg: fmt.Sprintf("could not be locked: %s is not a regular file; nothing was written", lockFile), Err: err}
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		_ = unix.Close(fd)
		return nil, &FileError{File: file, Msg: fmt.Sprintf("could not be locked: %v; nothing was written", err), Err: err}
	}
	return func() { _ = unix.Close(fd) }, nil
}

func removeStaleTemps(file string) {
	dir := filepath.Dir(file)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	prefix := wallsTempPrefix(file)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// writeAtomic puts data at file by renaming a synced 0600 temp file from the
// same folder over it: a reader sees the old bytes or the new, never half.
func writeAtomic(file string, data []byte) (err error) {
	fail := func(step string, cause error) error {
		return &FileError{File: file, Msg: fmt.Sprintf("could not be written (%s: %v); the file is left as it was", step, cause), Err: cause}
	}
	// Checked again under the lock, just before the rename: the rename would
	// replace a link rather than write through it, but a link here means
	// someone else is arranging this path.
	if fi, err := os.Lstat(file); err == nil && !fi.Mode().IsRegular() {
		return &FileError{File: file, Msg: "is not a regular file (a symlink?); nothing was written"}
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), wallsTempPrefix(file)+"*")
	if err != nil {
		return fail("creating a temp file", err)
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fail("chmod", err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail("write", err)
	}
	if err := tmp.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := tmp.Close(); err != nil {
		return fail("close", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fail("rename", err)
	}
	renamed = true
	return nil
}

func syncDir(dir string) error {
	fd, err := openRetry(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fsync(fd)
}
