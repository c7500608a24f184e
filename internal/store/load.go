package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
)

// loadAll reads every object file at Open. A file is taken whole, status
// and versions included: it is the store's own persisted state (or an
// owner's file written while the store was down). Files that are refused
// are reported as Problems; files still being written are left to the
// file watch.
func (s *Store) loadAll() error {
	// The event recorder may already be writing (a refused file is
	// reported as an event), so loading holds the write lock like any
	// other change.
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	type loaded struct {
		e    *entry
		rvOK bool
	}
	var all []loaded
	if !s.opts.readOnly {
		if des, err := os.ReadDir(s.dir); err == nil {
			for _, de := range des {
				if isStaleTemp(de.Name()) {
					_ = os.Remove(filepath.Join(s.dir, de.Name()))
				}
			}
		}
	}
	var paths []string
	for _, k := range s.kinds {
		kp, err := s.objectFiles(k)
		if err != nil {
			return err
		}
		paths = append(paths, kp...)
	}
	sort.Strings(paths)
	results := s.readAtLoad(paths)
	for _, path := range paths {
		r := results[path]
		switch {
		case r.err == nil:
			if e, rvOK := s.loadFile(path, r.data); e != nil {
				all = append(all, loaded{e, rvOK})
			}
		case errors.Is(r.err, errUnsettled) && s.files != nil:
			s.files.schedule(path, s.opts.settle)
		case errors.Is(r.err, os.ErrNotExist):
		default:
			s.reportFileProblem(path, "", 0, r.err.Error(), nil)
		}
	}

	// Versions: keep each file's own where it is sound and unique, then
	// number the rest after the highest, so the counter never goes back.
	seen := map[uint64]bool{}
	for i := range all {
		if all[i].rvOK && !seen[all[i].e.rv] {
			seen[all[i].e.rv] = true
			s.rv.observe(all[i].e.rv)
		} else {
			all[i].rvOK = false
		}
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].e.kind.path(s.dir, all[i].e.key) < all[j].e.kind.path(s.dir, all[j].e.key)
	})
	for _, l := range all {
		if !l.rvOK {
			rv, err := s.rv.next()
			if err != nil {
				return err
			}
			l.e.rv = rv
			(&admitted{typed: l.e.typed, obj: l.e.obj}).setRV(rv)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range all {
		s.objects[l.e.kind][l.e.key] = l.e
	}
	s.lastRV = s.rv.current
	s.floor = s.lastRV
	return nil
}

// objectFiles lists the .yaml files in a kind's folder tree; misplaced
// ones are reported.
func (s *Store) objectFiles(k *kindInfo) ([]string, error) {
	root := k.dir(s.dir, "")
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("read %s: %w", p, err)
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || strings.Count(strings.TrimPrefix(p, root), string(filepath.Separator)) > 1) {
				return filepath.SkipDir
			}
			return nil
		}
		if isObjectFileName(d.Name()) {
			out = append(out, p)
		}
		if isStaleTemp(d.Name()) && !s.opts.readOnly {
			// A writer killed mid-write leaves its temp file; the
			// object file itself is whole (old or new). Open holds
			// the lock, so no live writer owns it.
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				s.log.Error(err, "cannot remove a stale temp file", "file", p)
			}
		}
		return nil
	})
	return out, err
}

// readAtLoad reads files that may be mid-write. Without a file watch to
// come back to them, it waits a little for unsettled ones.
func (s *Store) readAtLoad(paths []string) map[string]readResult {
	out := readSettled(paths, s.opts.settle/2, nil)
	for i := 0; i < 40 && s.files == nil; i++ {
		var again []string
		for p, r := range out {
			if errors.Is(r.err, errUnsettled) {
				again = append(again, p)
			}
		}
		if len(again) == 0 {
			break
		}
		time.Sleep(unsettledRetry)
		for p, r := range readSettled(again, s.opts.settle/2, nil) {
			out[p] = r
		}
	}
	return out
}

// loadFile admits one file at Open. rvOK says its resourceVersion can be
// kept; otherwise loadAll numbers it.
func (s *Store) loadFile(path string, data []byte) (*entry, bool) {
	ref, ok := s.parsePath(path)
	if !ok {
		return nil, false
	}
	if ref.misplaced != "" {
		s.reportFileProblem(path, "", 0, ref.misplaced, data)
		return nil, false
	}
	doc, obj, errs, err := decodeFile(ref, data)
	if err != nil {
		line := 0
		var se *syntaxError
		if errors.As(err, &se) {
			line = se.line
		}
		s.reportFileProblem(path, "", line, err.Error(), data)
		return nil, false
	}
	if len(errs) > 0 {
		s.reportFieldProblem(path, doc, errs, data)
		return nil, false
	}
	m := metaOf(obj)
	rv, rvOK := parseRV(metaString(obj, "resourceVersion"))
	delete(m, "resourceVersion")
	if uid, _ := m["uid"].(string); uid == "" {
		m["uid"] = string(uuid.NewUUID())
	}
	if ts, _ := m["creationTimestamp"].(string); ts == "" {
		m["creationTimestamp"] = s.now().UTC().Format(metav1RFC3339)
	}
	if g, _ := m["generation"].(int64); g < 1 {
		m["generation"] = int64(1)
	}
	adm, errs := s.admit(ref.kind, obj)
	if len(errs) > 0 {
		s.reportFieldProblem(path, doc, errs, data)
		return nil, false
	}
	if !rvOK {
		rv = 0
	}
	adm.setRV(rv)
	return &entry{kind: ref.kind, key: ref.key, rv: rv, obj: adm.obj, typed: adm.typed, fileHash: hashOf(data)}, rvOK
}
