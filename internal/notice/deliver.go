package notice

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"golang.org/x/sys/unix"

	// The pure-Go SQLite driver, so the binary stays CGO_ENABLED=0.
	_ "modernc.org/sqlite"
)

// Where notes go.
const (
	// CrowDBName is Crow's database in its data folder.
	CrowDBName = "crow.db"
	// FileDir and FileName make the fallback <CROW_HOME>/addonwall/notices.jsonl.
	FileDir  = "addonwall"
	FileName = "notices.jsonl"
	// Source is the notifications.source value of our notes.
	Source = "addonwall"
	// busyTimeout is how long an insert waits for Crow's own writers.
	busyTimeout = 5 * time.Second
)

// Destination says where Deliver may put a note.
type Destination struct {
	// DataDir is Crow's data folder (CROW_DATA_DIR); its crow.db is the bell.
	DataDir string
	// CrowHome is the Crow home (CROW_HOME), for the notices file.
	CrowHome string
}

// Channel is where a note went.
type Channel string

// Channels.
const (
	ChannelBell Channel = "bell"
	ChannelFile Channel = "file"
)

// Deliver sends one note. When <DataDir>/crow.db exists, the note becomes a
// row of Crow's notifications table, as Crow's createNotification writes it
// (type 'system'); when it does not, the note is appended to
// <CrowHome>/addonwall/notices.jsonl. A crow.db that is there but cannot
// take the row (no notifications table, read-only, not a database, a
// symlink) is an error, not a reason to write the file instead: the owner
// looks at the bell, and a note that missed it must be sent again. Nothing
// is ever created in crow.db, and crow.db itself is never created.
//
// Crow's createNotification skips a type the owner muted in
// dashboard_settings; Deliver does not read that setting, because add-ons
// that share Crow's database can write it, and a note about walls must not
// be one an add-on can mute.
func Deliver(ctx context.Context, dst Destination, n Notice) (Channel, error) {
	if err := check(n); err != nil {
		return "", fmt.Errorf("notice not delivered: %w", err)
	}
	if n.Time.IsZero() {
		n.Time = time.Now()
	}
	n.Time = n.Time.UTC()
	if !filepath.IsAbs(dst.DataDir) {
		return "", fmt.Errorf("notice not delivered: data dir %q is not an absolute path", dst.DataDir)
	}
	db := filepath.Join(dst.DataDir, CrowDBName)
	fi, err := os.Lstat(db)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := appendFile(dst.CrowHome, n); err != nil {
			return "", fmt.Errorf("notice not delivered, it is retried at the next boot: %w", err)
		}
		return ChannelFile, nil
	case err != nil:
		return "", fmt.Errorf("notice not delivered, it is retried at the next boot: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return "", fmt.Errorf("notice not delivered: %s is a symbolic link, and a note is written only into the data folder's own crow.db", db)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("notice not delivered: %s is not a regular file", db)
	}
	if err := insertBell(ctx, db, n); err != nil {
		return "", fmt.Errorf("notice not delivered to the bell in %s, it is retried at the next boot: %w", db, err)
	}
	return ChannelBell, nil
}

// check refuses a note that is not one of ours or holds text that is not
// inert; planning never makes one, so this guards callers that build their
// own.
func check(n Notice) error {
	if !slices.Contains(kinds, n.Kind) {
		return fmt.Errorf("kind %q is not one of %v", n.Kind, kinds)
	}
	if n.Title == "" {
		return errors.New("title is empty")
	}
	if i := strings.IndexFunc(n.Title, unsafeRune); i >= 0 {
		return fmt.Errorf("title has a control character at byte %d", i)
	}
	if i := strings.IndexFunc(n.Body, func(r rune) bool { return r != '\n' && unsafeRune(r) }); i >= 0 {
		return fmt.Errorf("body has a control character at byte %d", i)
	}
	return nil
}

func unsafeRune(r rune) bool {
	return r == unicode.ReplacementChar || unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// priority follows Crow's low/normal/high: a note about walls being off
// asks for attention, a note that walls came on does not.
func priority(k Kind) string {
	switch k {
	case KindKillSwitch, KindSettingsChanged:
		return "high"
	}
	return "normal"
}

func insertBell(ctx context.Context, path string, n Notice) error {
	// mode=rw: open an existing database read-write and never create one;
	// the busy timeout waits out the gateway's own writers. The path is
	// escaped for SQLite's URI form, which gives '?', '#' and '%' meaning.
	dsn := "file:" + uriPath(path) + fmt.Sprintf("?mode=rw&_pragma=busy_timeout(%d)", busyTimeout.Milliseconds())
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	meta, err := json.Marshal(struct {
		Kind Kind   `json:"kind"`
		Lang string `json:"lang,omitempty"`
		Time string `json:"time"`
	}{n.Kind, n.Lang, n.Time.Format(time.RFC3339Nano)})
	if err != nil {
		return err
	}
	res, err := db.ExecContext(ctx,
		`INSERT INTO notifications (type, source, title, body, priority, action_url, metadata) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		"system", Source, n.Title, n.Body, priority(n.Kind), nil, string(meta))
	if err != nil {
		return fmt.Errorf("insert into notifications: %w", err)
	}
	if c, err := res.RowsAffected(); err != nil || c != 1 {
		return fmt.Errorf("insert into notifications wrote %d rows (%v)", c, err)
	}
	return nil
}

func uriPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
}

// appendFile appends one JSON line to <home>/addonwall/notices.jsonl: the
// folder 0700 and the file 0600 (tightened if they were looser), neither a
// symlink, the line written in one append under an exclusive lock.
func appendFile(home string, n Notice) error {
	if !filepath.IsAbs(home) {
		return fmt.Errorf("the Crow home %q is not an absolute path", home)
	}
	if fi, err := os.Stat(home); err != nil {
		return fmt.Errorf("the Crow home: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("the Crow home %s is not a folder", home)
	}
	dir := filepath.Join(home, FileDir)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder (a symlink or a file is refused)", dir)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("tighten %s to 0700: %w", dir, err)
		}
	}
	path := filepath.Join(dir, FileName)
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if st.Mode().Perm() != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			return fmt.Errorf("tighten %s to 0600: %w", path, err)
		}
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	line, err := json.Marshal(n)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if _, err := f.Write(line); err != nil {
		return fmt.Errorf("append to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return f.Close()
}
