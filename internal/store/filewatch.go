package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// fileWatcher turns file system events in the store's folders into
// checks of single files. Events only say "look at this path": every
// check re-reads the file and decides from its content, so a missed,
// doubled or reordered event cannot make the store wrong, only late.
type fileWatcher struct {
	s *Store
	w *fsnotify.Watcher

	mu      sync.Mutex
	pending map[string]*pendingCheck
	wake    chan struct{}

	done chan struct{}
	wg   sync.WaitGroup
}

type pendingCheck struct {
	due   time.Time
	first time.Time // when the file was first seen unsettled, for the stuck report
}

const (
	// unsettledRetry is how often a file still being written is looked at.
	unsettledRetry = 50 * time.Millisecond
	// stuckAfter is how long a file may stay open for writing before the
	// store reports it as a problem (it keeps looking).
	stuckAfter = 10 * time.Second
)

func newFileWatcher(s *Store) (*fileWatcher, error) {
	w, err := fsnotify.NewBufferedWatcher(1024)
	if err != nil {
		return nil, err
	}
	fw := &fileWatcher{
		s: s, w: w,
		pending: map[string]*pendingCheck{},
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	if err := fw.addTree(s.dir, false); err != nil {
		_ = w.Close()
		return nil, err
	}
	return fw, nil
}

func (fw *fileWatcher) start() {
	fw.wg.Add(2)
	go fw.eventLoop()
	go fw.checkLoop()
}

func (fw *fileWatcher) stop() {
	close(fw.done)
	_ = fw.w.Close()
	fw.wg.Wait()
}

// addTree watches dir and the store folders under it (down to namespace
// folders), and, if scan, schedules a check of every object file found:
// a folder created by hand may hold files written before the watch.
func (fw *fileWatcher) addTree(dir string, scan bool) error {
	depth := fw.depth(dir)
	if depth < 0 || depth > 3 {
		return nil
	}
	if err := fw.w.Add(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, de := range entries {
		p := filepath.Join(dir, de.Name())
		if de.IsDir() {
			if strings.HasPrefix(de.Name(), ".") {
				continue
			}
			if err := fw.addTree(p, scan); err != nil {
				return err
			}
		} else if scan && isObjectFileName(de.Name()) {
			fw.schedule(p, 0)
		}
	}
	return nil
}

// depth is how far below the store root a path is (root 0, group folder
// 1, kind folder 2, namespace folder 3), or -1 outside it.
func (fw *fileWatcher) depth(p string) int {
	rel, err := filepath.Rel(fw.s.dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return -1
	}
	if rel == "." {
		return 0
	}
	return strings.Count(rel, string(filepath.Separator)) + 1
}

func (fw *fileWatcher) eventLoop() {
	defer fw.wg.Done()
	for {
		select {
		case <-fw.done:
			return
		case ev, ok := <-fw.w.Events:
			if !ok {
				return
			}
			fw.handle(ev)
		case err, ok := <-fw.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				fw.s.log.Info("file events overflowed; rescanning the store", "dir", fw.s.dir)
				fw.rescan()
				continue
			}
			fw.s.log.Error(err, "file watch error; hand edits may be seen late", "dir", fw.s.dir)
		}
	}
}

func (fw *fileWatcher) handle(ev fsnotify.Event) {
	base := filepath.Base(ev.Name)
	if strings.HasPrefix(base, ".") {
		return
	}
	if ev.Has(fsnotify.Create) {
		if st, err := os.Lstat(ev.Name); err == nil && st.IsDir() {
			if err := fw.addTree(ev.Name, true); err != nil {
				fw.s.log.Error(err, "cannot watch a new folder; its hand edits are not seen", "dir", ev.Name)
			}
			return
		}
	}
	if isObjectFileName(base) {
		fw.schedule(ev.Name, fw.s.opts.settle)
		return
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		// A folder went away: every object that lived under it is
		// looked at again (and found gone).
		fw.checkKnownUnder(ev.Name)
	}
}

// schedule asks for a check of path after delay, pushing back a check
// already pending (more events mean the writer is still busy).
func (fw *fileWatcher) schedule(path string, delay time.Duration) {
	fw.mu.Lock()
	p := fw.pending[path]
	if p == nil {
		p = &pendingCheck{}
		fw.pending[path] = p
	}
	p.due = time.Now().Add(delay)
	fw.mu.Unlock()
	select {
	case fw.wake <- struct{}{}:
	default:
	}
}

func (fw *fileWatcher) checkKnownUnder(dir string) {
	prefix := dir + string(filepath.Separator)
	for _, p := range fw.s.knownPaths() {
		if strings.HasPrefix(p, prefix) {
			fw.schedule(p, 0)
		}
	}
}

func (fw *fileWatcher) rescan() {
	if err := fw.addTree(fw.s.dir, true); err != nil {
		fw.s.log.Error(err, "rescan of the store failed", "dir", fw.s.dir)
	}
	for _, p := range fw.s.knownPaths() {
		fw.schedule(p, 0)
	}
}

// checkLoop runs due checks, a batch at a time, so two checks of one
// file never race and a burst of edits costs one settle wait.
func (fw *fileWatcher) checkLoop() {
	defer fw.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		due, wait := fw.due()
		if len(due) == 0 {
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			timer.Reset(wait)
			select {
			case <-fw.done:
				return
			case <-fw.wake:
			case <-timer.C:
			}
			continue
		}
		retry := fw.s.checkPaths(due)
		fw.mu.Lock()
		for path, first := range retry {
			p := fw.pending[path]
			if p == nil {
				p = &pendingCheck{due: time.Now().Add(unsettledRetry)}
				fw.pending[path] = p
			}
			p.first = first
		}
		fw.mu.Unlock()
	}
}

// due pops every check that is due, or says how long until the next.
func (fw *fileWatcher) due() (map[string]time.Time, time.Duration) {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	now := time.Now()
	wait := time.Hour
	var out map[string]time.Time
	for p, pc := range fw.pending {
		if pc.due.After(now) {
			if d := pc.due.Sub(now); d < wait {
				wait = d
			}
			continue
		}
		if out == nil {
			out = map[string]time.Time{}
		}
		out[p] = pc.first
		delete(fw.pending, p)
	}
	return out, wait
}

// scheduleCheck asks the file watcher (if any) to look at path soon: the
// store found it different from what it last saw.
func (s *Store) scheduleCheck(path string) {
	if s.files != nil {
		s.files.schedule(path, 0)
	}
}

func (s *Store) knownPaths() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for k, byKey := range s.objects {
		for key, e := range byKey {
			if !e.fileGone {
				out = append(out, k.path(s.dir, key))
			}
		}
	}
	return out
}
