// Package fswatch turns changes to a set of files and folders into hints on
// a channel. It watches parent folders rather than the files themselves,
// so an editor that saves by writing a new file and renaming it over the
// old one is still seen, and a file that does not exist yet is seen when it
// appears. A hint carries no event type: whoever receives it re-reads.
package fswatch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
)

// Watcher sends a hint for every change under its paths.
type Watcher struct {
	w      *fsnotify.Watcher
	log    logr.Logger
	settle time.Duration

	mu      sync.Mutex
	files   map[string]bool // exact files of interest
	trees   map[string]bool // folders whose whole content is of interest
	watched map[string]bool // folders fsnotify watches
}

// New returns a watcher whose hints settle for the given time: a burst of
// changes inside that window is one hint.
func New(log logr.Logger, settle time.Duration) (*Watcher, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("starting the file watcher (changes to Crow's files will only be seen at the next resync): %w", err)
	}
	return &Watcher{w: fw, log: log, settle: settle, files: map[string]bool{}, trees: map[string]bool{}, watched: map[string]bool{}}, nil
}

// File asks for hints when the file at path is created, written, renamed
// or removed. Its folder need not exist yet: the nearest existing parent is
// watched until it does.
func (w *Watcher) File(path string) {
	path = filepath.Clean(path)
	w.mu.Lock()
	w.files[path] = true
	w.mu.Unlock()
	w.watchNearest(filepath.Dir(path))
}

// Tree asks for hints when anything directly inside the folder at path, or
// inside any folder directly inside it, changes (two levels: enough for
// <bundles>/<id>/manifest.json).
func (w *Watcher) Tree(path string) {
	path = filepath.Clean(path)
	w.mu.Lock()
	w.trees[path] = true
	w.mu.Unlock()
	w.watchNearest(path)
	entries, err := os.ReadDir(path)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			w.add(filepath.Join(path, e.Name()))
		}
	}
}

func (w *Watcher) watchNearest(dir string) {
	for d := dir; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			w.add(d)
			return
		}
		if d == filepath.Dir(d) {
			return
		}
	}
}

func (w *Watcher) add(dir string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched[dir] {
		return
	}
	if err := w.w.Add(dir); err != nil {
		w.log.V(1).Info("cannot watch a folder; its changes are seen at the next resync", "folder", dir, "error", err.Error())
		return
	}
	w.watched[dir] = true
}

// interesting reports whether a change at path matters, and adds watches
// for folders that appeared on the way to a file or inside a tree.
func (w *Watcher) interesting(path string) bool {
	w.mu.Lock()
	files, trees := w.files, w.trees
	w.mu.Unlock()
	if files[path] {
		return true
	}
	dir := filepath.Dir(path)
	if trees[path] || trees[dir] || trees[filepath.Dir(dir)] {
		if fi, err := os.Lstat(path); err == nil && fi.IsDir() && trees[dir] {
			w.add(path)
		}
		return true
	}
	// A folder on the way to a file of interest appeared: watch it.
	for f := range files {
		if under(path, f) {
			if fi, err := os.Stat(path); err == nil && fi.IsDir() {
				w.watchNearest(filepath.Dir(f))
				return true
			}
		}
	}
	for t := range trees {
		if under(path, t) {
			if fi, err := os.Stat(path); err == nil && fi.IsDir() {
				w.Tree(t)
				return true
			}
		}
	}
	return false
}

// under reports whether p lies strictly below dir.
func under(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}

// Run sends a hint on out after each settled burst of interesting changes
// until ctx ends. Give out a buffer of one: hints are coalesced, and a hint
// not yet taken is not doubled.
func (w *Watcher) Run(ctx context.Context, out chan<- struct{}) error {
	defer w.w.Close()
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.w.Events:
			if !ok {
				return nil
			}
			if !w.interesting(filepath.Clean(ev.Name)) {
				continue
			}
			if timer == nil {
				timer = time.NewTimer(w.settle)
				fire = timer.C
			}
		case err, ok := <-w.w.Errors:
			if !ok {
				return nil
			}
			// An overflow loses events: hint so everything is re-read.
			w.log.Info("file watch reported an error; re-reading everything", "error", err.Error())
			if timer == nil {
				timer = time.NewTimer(w.settle)
				fire = timer.C
			}
		case <-fire:
			timer, fire = nil, nil
			select {
			case out <- struct{}{}:
			default:
			}
		}
	}
}
