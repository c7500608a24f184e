package notice

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/addonwall/addonwall/internal/decide"
)

// crowNotificationsDDL is the notifications table as Crow's scripts/init-db.js
// creates it (read from kh0pper/crow; written out here, not copied): Crow's
// createNotification inserts type, source, title, body, priority,
// action_url, metadata, schedule_id, expires_at and leaves the rest to
// their defaults.
const crowNotificationsDDL = `
CREATE TABLE notifications (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	type          TEXT NOT NULL DEFAULT 'system',
	source        TEXT,
	title         TEXT NOT NULL,
	body          TEXT,
	priority      TEXT DEFAULT 'normal',
	action_url    TEXT,
	metadata      TEXT,
	is_read       INTEGER DEFAULT 0,
	is_dismissed  INTEGER DEFAULT 0,
	snoozed_until TEXT,
	schedule_id   INTEGER,
	expires_at    TEXT,
	created_at    TEXT DEFAULT (datetime('now')),
	updated_at    TEXT DEFAULT (datetime('now'))
)`

// newCrowDB makes <dir>/crow.db with the given statements run on it, in
// WAL mode like a running gateway's.
func newCrowDB(t *testing.T, dir string, stmts ...string) string {
	t.Helper()
	path := filepath.Join(dir, CrowDBName)
	db, err := sql.Open("sqlite", "file:"+uriPath(path))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range append([]string{"PRAGMA journal_mode=WAL", "CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT)"}, stmts...) {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}

type row struct {
	typ, source, title, body, priority string
	actionURL                          sql.NullString
	metadata                           string
	isRead                             int
	created                            sql.NullString
}

func rows(t *testing.T, path string) []row {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+uriPath(path)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := db.Query(`SELECT type, COALESCE(source, ''), title, COALESCE(body, ''), priority, action_url, COALESCE(metadata, ''), is_read, created_at FROM notifications ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.typ, &r.source, &r.title, &r.body, &r.priority, &r.actionURL, &r.metadata, &r.isRead, &r.created); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func dirs(t *testing.T) Destination {
	t.Helper()
	root := t.TempDir()
	d := Destination{DataDir: filepath.Join(root, "data"), CrowHome: filepath.Join(root, "crow")}
	for _, p := range []string{d.DataDir, d.CrowHome} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

var sample = Notice{Kind: KindKillSwitch, Title: "Add-on walls are switched off by the operator", Body: "line one\nline two", Lang: "en"}

func noFile(t *testing.T, d Destination) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(d.CrowHome, FileDir)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the notices folder exists (%v): a bell failure must not fall back to the file", err)
	}
}

func TestDeliverToTheBell(t *testing.T) {
	d := dirs(t)
	db := newCrowDB(t, d.DataDir, crowNotificationsDDL)
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.FixedZone("x", 3600))
	n := sample
	n.Time = at
	ch, err := Deliver(context.Background(), d, n)
	if err != nil || ch != ChannelBell {
		t.Fatalf("Deliver = %q, %v", ch, err)
	}
	got := rows(t, db)
	if len(got) != 1 {
		t.Fatalf("%d rows", len(got))
	}
	r := got[0]
	if r.typ != "system" || r.source != "addonwall" || r.title != n.Title || r.body != n.Body || r.priority != "high" ||
		r.actionURL.Valid || r.isRead != 0 || !r.created.Valid {
		t.Fatalf("row = %+v", r)
	}
	var meta map[string]string
	if err := json.Unmarshal([]byte(r.metadata), &meta); err != nil {
		t.Fatal(err)
	}
	if meta["kind"] != "killSwitch" || meta["lang"] != "en" || meta["time"] != "2026-05-01T11:00:00Z" {
		t.Fatalf("metadata = %v", meta)
	}
	noFile(t, d)
	// A walls-on note asks for less attention.
	n2 := Notice{Kind: KindWallsNowOn, Title: "t", Body: "b"}
	if _, err := Deliver(context.Background(), d, n2); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, db); len(got) != 2 || got[1].priority != "normal" {
		t.Fatalf("rows = %+v", got)
	}
}

func TestDeliverToTheFileWhenThereIsNoCrowDB(t *testing.T) {
	d := dirs(t)
	before := time.Now().UTC().Add(-time.Second)
	for i := range 2 {
		ch, err := Deliver(context.Background(), d, sample)
		if err != nil || ch != ChannelFile {
			t.Fatalf("Deliver %d = %q, %v", i, ch, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(d.DataDir, CrowDBName)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("crow.db was created: %v", err)
	}
	dir := filepath.Join(d.CrowHome, FileDir)
	if fi, err := os.Lstat(dir); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Fatalf("folder %v %v", fi.Mode(), err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, FileName)); err != nil || fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
		t.Fatalf("file %v %v", fi.Mode(), err)
	}
	got, err := List(d.CrowHome)
	if err != nil || len(got) != 2 {
		t.Fatalf("List = %+v, %v", got, err)
	}
	for _, n := range got {
		if n.Kind != sample.Kind || n.Title != sample.Title || n.Body != sample.Body || n.Lang != "en" ||
			n.Time.Before(before) || n.Time.Location() != time.UTC {
			t.Fatalf("read back %+v", n)
		}
	}
}

func TestDeliverTightensLooseFilePermissions(t *testing.T) {
	d := dirs(t)
	dir := filepath.Join(d.CrowHome, FileDir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // past the umask
		t.Fatal(err)
	}
	if _, err := Deliver(context.Background(), d, sample); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Lstat(dir)
	fj, _ := os.Lstat(filepath.Join(dir, FileName))
	if fi.Mode().Perm() != 0o700 || fj.Mode().Perm() != 0o600 {
		t.Fatalf("modes %v %v", fi.Mode(), fj.Mode())
	}
}

func TestDeliverFailures(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, d Destination)
		wantErr string
	}{
		{"crow.db without a notifications table", func(t *testing.T, d Destination) {
			newCrowDB(t, d.DataDir)
		}, "no such table: notifications"},
		{"crow.db that is not a database", func(t *testing.T, d Destination) {
			if err := os.WriteFile(filepath.Join(d.DataDir, CrowDBName), []byte(strings.Repeat("not sqlite ", 100)), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a database"},
		{"crow.db that is a folder", func(t *testing.T, d Destination) {
			if err := os.Mkdir(filepath.Join(d.DataDir, CrowDBName), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
		{"crow.db that is a symlink to a good database", func(t *testing.T, d Destination) {
			other := t.TempDir()
			target := newCrowDB(t, other, crowNotificationsDDL)
			if err := os.Symlink(target, filepath.Join(d.DataDir, CrowDBName)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if n := len(rows(t, target)); n != 0 {
					t.Errorf("the symlink's target got %d rows", n)
				}
			})
		}, "is a symbolic link"},
		{"a notifications table that refuses inserts", func(t *testing.T, d Destination) {
			newCrowDB(t, d.DataDir, crowNotificationsDDL,
				`CREATE TRIGGER refuse BEFORE INSERT ON notifications BEGIN SELECT RAISE(ABORT, 'refused by test'); END`)
		}, "refused by test"},
		{"a relative data dir", func(t *testing.T, d Destination) {}, "not an absolute path"},
		{"no crow.db and no Crow home", func(t *testing.T, d Destination) {
			if err := os.Remove(d.CrowHome); err != nil {
				t.Fatal(err)
			}
		}, "Crow home"},
		{"no crow.db and the notices folder is a symlink", func(t *testing.T, d Destination) {
			if err := os.Symlink(t.TempDir(), filepath.Join(d.CrowHome, FileDir)); err != nil {
				t.Fatal(err)
			}
		}, "is not a folder"},
		{"no crow.db and the notices file is a symlink", func(t *testing.T, d Destination) {
			if err := os.Mkdir(filepath.Join(d.CrowHome, FileDir), 0o700); err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(t.TempDir(), "elsewhere")
			if err := os.WriteFile(target, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(d.CrowHome, FileDir, FileName)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if b, _ := os.ReadFile(target); len(b) != 0 {
					t.Errorf("the symlink's target was written: %q", b)
				}
			})
		}, "too many levels of symbolic links"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := dirs(t)
			tt.setup(t, d)
			if tt.name == "a relative data dir" {
				d.DataDir = "data"
			}
			ch, err := Deliver(context.Background(), d, sample)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Deliver = %q, %v; want an error with %q", ch, err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "notice not delivered") {
				t.Fatalf("error %q does not say the note was not delivered", err)
			}
			if strings.Contains(tt.name, "crow.db") && !strings.HasPrefix(tt.name, "no crow.db") {
				noFile(t, d)
			}
		})
	}
}

// A crow.db with no notifications table gets none: delivery never creates
// anything in Crow's database.
func TestDeliverCreatesNothingInCrowDB(t *testing.T) {
	d := dirs(t)
	db := newCrowDB(t, d.DataDir)
	if _, err := Deliver(context.Background(), d, sample); err == nil {
		t.Fatal("delivered without a table")
	}
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var names []string
	rs, err := conn.Query(`SELECT name FROM sqlite_master ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var n string
		if err := rs.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if strings.Join(names, ",") != "memories" {
		t.Fatalf("crow.db now holds %v", names)
	}
}

// mode=rw: a crow.db that vanishes between the look and the open is not
// created by the open.
func TestInsertBellDoesNotCreateTheDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), CrowDBName)
	if err := insertBell(context.Background(), path, sample); err == nil {
		t.Fatal("insert into a missing database succeeded")
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the database was created: %v", err)
	}
}

const fsImmutableFL = 0x00000010 // FS_IMMUTABLE_FL from linux/fs.h

// A crow.db the controller cannot write is a delivery error. As root, file
// modes do not stop a write, so the file is made immutable instead.
func TestDeliverToAReadOnlyCrowDB(t *testing.T) {
	d := dirs(t)
	db := newCrowDB(t, d.DataDir, crowNotificationsDDL)
	// Fold the WAL back so the database is one file.
	conn, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec("PRAGMA journal_mode=DELETE"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if os.Geteuid() != 0 {
		if err := os.Chmod(db, 0o444); err != nil {
			t.Fatal(err)
		}
	} else {
		f, err := os.Open(db)
		if err != nil {
			t.Fatal(err)
		}
		flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
		if err == nil {
			err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags|fsImmutableFL)
		}
		if err != nil {
			f.Close()
			t.Skipf("cannot make %s read-only as root on this filesystem: %v", db, err)
		}
		// Registered after TempDir's own cleanup, so it runs first.
		t.Cleanup(func() {
			defer f.Close()
			if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags); err != nil {
				t.Errorf("clear immutable flag: %v", err)
			}
		})
	}
	if _, err := Deliver(context.Background(), d, sample); err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Fatalf("Deliver to a read-only crow.db = %v, want a readonly error", err)
	}
	noFile(t, d)
}

// The bell waits for a gateway that holds the write lock, then delivers.
func TestDeliverWaitsForCrowsWriter(t *testing.T) {
	d := dirs(t)
	db := newCrowDB(t, d.DataDir, crowNotificationsDDL)
	crow, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	defer crow.Close()
	ctx := context.Background()
	conn, err := crow.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Deliver(ctx, d, sample)
		done <- err
	}()
	time.Sleep(200 * time.Millisecond) // let Deliver meet the lock
	if _, err := conn.ExecContext(ctx, "INSERT INTO notifications (title) VALUES ('crow''s own')"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Deliver behind a writer: %v", err)
	}
	if got := rows(t, db); len(got) != 2 || got[1].source != "addonwall" {
		t.Fatalf("rows = %+v", got)
	}
}

// '?', '#' and '%' are URI syntax to SQLite; a data dir holding them still
// names the right file.
func TestDeliverToADataDirWithURICharacters(t *testing.T) {
	root := t.TempDir()
	d := Destination{DataDir: filepath.Join(root, "da?ta#1%20x"), CrowHome: root}
	if err := os.Mkdir(d.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	db := newCrowDB(t, d.DataDir, crowNotificationsDDL)
	if ch, err := Deliver(context.Background(), d, sample); err != nil || ch != ChannelBell {
		t.Fatalf("Deliver = %q, %v", ch, err)
	}
	if len(rows(t, db)) != 1 {
		t.Fatal("row not in the database at the odd path")
	}
	if entries, _ := os.ReadDir(root); len(entries) != 1 {
		t.Fatalf("another file appeared beside the data dir: %v", entries)
	}
}

func TestDeliverRefusesNotesThatAreNotOurs(t *testing.T) {
	d := dirs(t)
	for _, n := range []Notice{
		{Kind: "bogus", Title: "t"},
		{Kind: KindWallsNowOn},
		{Kind: KindWallsNowOn, Title: "red\x1b[31m"},
		{Kind: KindWallsNowOn, Title: "t", Body: "a\u202eb"},
		{Kind: KindWallsNowOn, Title: "t", Body: "a\rb"},
	} {
		if _, err := Deliver(context.Background(), d, n); err == nil {
			t.Errorf("Deliver(%+v) succeeded", n)
		}
	}
	noFile(t, d)
	// Positive control: a multi-line body is fine.
	if _, err := Deliver(context.Background(), d, Notice{Kind: KindWallsNowOn, Title: "t", Body: "a\nb"}); err != nil {
		t.Fatal(err)
	}
}

// Text from files stays inert from the plan through both channels.
func TestInertEndToEnd(t *testing.T) {
	evil := Entry{ID: "x\x1b]8;;http://evil\x07y", Name: "<script>alert(1)</script>\nline", Mode: "NotWalled", Reason: "OwnerChoice"}
	planned := PlanBoot(BootInput{Switches: wallsOn, Entries: []Entry{evil}, Announced: Announced{WallsOn: true}})
	if len(planned) != 1 {
		t.Fatalf("planned %+v", planned)
	}
	assertInert := func(where, s string) {
		t.Helper()
		for _, bad := range []string{"\x1b", "\x07", "<script", "</script>"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s carries %q: %q", where, bad, s)
			}
		}
		if !strings.Contains(s, `&lt;script&gt;alert(1)&lt;/script&gt;\nline (x\x1b]8;;http://evil\x07y)`) {
			t.Errorf("%s lacks the escaped label: %q", where, s)
		}
	}
	d := dirs(t)
	db := newCrowDB(t, d.DataDir, crowNotificationsDDL)
	if _, err := Deliver(context.Background(), d, planned[0].Notice); err != nil {
		t.Fatal(err)
	}
	assertInert("bell row", rows(t, db)[0].body)

	d2 := dirs(t)
	if _, err := Deliver(context.Background(), d2, planned[0].Notice); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(d2.CrowHome, FileDir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(raw), "\n") != 1 {
		t.Fatalf("one note is not one line: %q", raw)
	}
	got, err := List(d2.CrowHome)
	if err != nil || len(got) != 1 {
		t.Fatalf("List = %v, %v", got, err)
	}
	assertInert("notices file", got[0].Body)
}

// Concurrent deliveries append whole lines.
func TestDeliverConcurrentAppends(t *testing.T) {
	d := dirs(t)
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				n := sample
				n.Body = strings.Repeat("x", 3000) + "\n" + decide.Inert(string(rune('a'+w))) + string(rune('0'+i%10))
				if _, err := Deliver(context.Background(), d, n); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := List(d.CrowHome)
	if err != nil || len(got) != workers*each {
		t.Fatalf("List = %d notes, %v", len(got), err)
	}
}
