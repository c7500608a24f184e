package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// Hand edits: a file changed by someone other than the store is read once
// it has settled, checked like any write, and applied as an update (or a
// create, or a delete when the file is gone). A file that does not parse
// or validate is reported (log, Event, Problems) and the last good
// version keeps serving.

// checkPaths looks at files whose events came in (with when each was
// first found still being written) and answers those to look at again
// later.
func (s *Store) checkPaths(paths map[string]time.Time) map[string]time.Time {
	list := make([]string, 0, len(paths))
	for p := range paths {
		list = append(list, p)
	}
	retry := map[string]time.Time{}
	for path, r := range readSettled(list, s.opts.settle/2, s.knownContent) {
		switch {
		case r.err == nil:
			s.ingest(path, r.data, true)
		case errors.Is(r.err, os.ErrNotExist):
			// Editors that save by renaming the old file away and
			// writing a new one leave a moment with no file at all:
			// a file must stay gone for missingGrace to count as
			// removed.
			first := paths[path]
			if first.IsZero() {
				first = time.Now()
			}
			if time.Since(first) < missingGrace && s.knownPath(path) {
				retry[path] = first
				continue
			}
			s.ingest(path, nil, false)
		case errors.Is(r.err, errUnsettled):
			first := paths[path]
			if first.IsZero() {
				first = time.Now()
			} else if time.Since(first) > stuckAfter {
				s.reportFileProblem(path, "", 0, fmt.Sprintf("the file has been open for writing for over %s; the store reads it once the writer closes it", stuckAfter), nil)
			}
			retry[path] = first
		default:
			s.reportFileProblem(path, "", 0, r.err.Error(), nil)
		}
	}
	return retry
}

// missingGrace is how long a file must stay gone to count as removed.
const missingGrace = 200 * time.Millisecond

// knownPath says whether the store holds an object (or a problem) for
// path, i.e. whether its absence would change anything.
func (s *Store) knownPath(path string) bool {
	if _, ok := s.problem(path); ok {
		return true
	}
	ref, ok := s.parsePath(path)
	if !ok || ref.kind == nil || ref.misplaced != "" {
		return false
	}
	e := s.lookup(ref.kind, ref.key)
	return e != nil && !e.fileGone
}

// knownContent says whether data is what the store already has for path:
// its own last write, or content it already refused.
func (s *Store) knownContent(path string, data []byte) bool {
	h := hashOf(data)
	if p, ok := s.problem(path); ok && p.hash == h {
		return true
	}
	ref, ok := s.parsePath(path)
	if !ok || ref.kind == nil || ref.misplaced != "" {
		return false
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	e := s.lookup(ref.kind, ref.key)
	return e != nil && !e.fileGone && e.fileHash == h
}

// fileRef is where a file sits in the store: its kind and key, or why it
// is not an object file of a served kind.
type fileRef struct {
	kind *kindInfo
	key  objKey
	// misplaced explains a .yaml file in a kind folder at the wrong depth.
	misplaced string
}

func (s *Store) parsePath(path string) (fileRef, bool) {
	rel, err := filepath.Rel(s.dir, path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fileRef{}, false
	}
	parts := strings.Split(rel, string(filepath.Separator))
	if len(parts) < 3 || !isObjectFileName(parts[len(parts)-1]) {
		return fileRef{}, false
	}
	k := s.byFolder[[2]string{parts[0], parts[1]}]
	if k == nil {
		return fileRef{}, false
	}
	name := strings.TrimSuffix(parts[len(parts)-1], objectSuffix)
	switch {
	case len(parts) == 4 && k.namespaced:
		return fileRef{kind: k, key: objKey{parts[2], name}}, true
	case len(parts) == 3 && !k.namespaced:
		return fileRef{kind: k, key: objKey{"", name}}, true
	case k.namespaced:
		return fileRef{kind: k, misplaced: fmt.Sprintf("%s is namespaced: its files go in %s/<namespace>/<name>.yaml", k.gvk.Kind, k.dir(s.dir, ""))}, true
	default:
		return fileRef{kind: k, misplaced: fmt.Sprintf("%s is cluster-scoped: its files go in %s/<name>.yaml", k.gvk.Kind, k.dir(s.dir, ""))}, true
	}
}

// decodeFile parses an object file and fills in (or checks) the type meta
// and the name and namespace its path gives.
func decodeFile(ref fileRef, data []byte) (*yaml.Node, map[string]any, field.ErrorList, error) {
	doc, err := parseDocument(data)
	if err != nil {
		return nil, nil, nil, err
	}
	v, err := nodeValue(doc, "")
	if err != nil {
		return doc, nil, nil, err
	}
	obj := v.(map[string]any)
	k := ref.kind
	if _, ok := obj["apiVersion"]; !ok {
		obj["apiVersion"] = k.gvk.GroupVersion().String()
	}
	if _, ok := obj["kind"]; !ok {
		obj["kind"] = k.gvk.Kind
	}
	if _, ok := obj["metadata"]; !ok {
		obj["metadata"] = map[string]any{}
	}
	m, ok := obj["metadata"].(map[string]any)
	if !ok {
		return doc, nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), obj["metadata"], "must be a mapping")}, nil
	}
	var errs field.ErrorList
	if n, ok := m["name"]; !ok {
		m["name"] = ref.key.name
	} else if n != ref.key.name {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), n, fmt.Sprintf("must be %q, the file's name", ref.key.name)))
	}
	ns, hasNS := m["namespace"]
	switch {
	case k.namespaced && !hasNS:
		m["namespace"] = ref.key.namespace
	case k.namespaced && ns != ref.key.namespace:
		errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), ns, fmt.Sprintf("must be %q, the folder's name", ref.key.namespace)))
	case !k.namespaced && hasNS && ns != "":
		errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), ns, k.gvk.Kind+" is cluster-scoped: leave namespace out"))
	}
	return doc, obj, errs, nil
}

// ingest applies a settled file (exists) or its absence to the store.
func (s *Store) ingest(path string, data []byte, exists bool) {
	ref, ok := s.parsePath(path)
	if !ok {
		return
	}
	if ref.misplaced != "" {
		if exists {
			s.reportFileProblem(path, "", 0, ref.misplaced, data)
		} else {
			s.clearProblem(path)
		}
		return
	}
	k, key := ref.kind, ref.key
	log := s.log.WithValues("file", path)

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.isClosed() {
		return
	}
	// The file was read before the lock was taken; the store may have
	// written it since. Only the file as it is now, with no write able to
	// slip in, may be applied: an older read applied late would undo the
	// store's own write. A changed file has an event of its own coming.
	if cur, err := readFileLimited(path); exists && (err != nil || !bytes.Equal(cur, data)) || !exists && err == nil {
		s.scheduleCheck(path)
		return
	}
	old := s.lookup(k, key)

	if !exists {
		if s.clearProblem(path) {
			log.Info("refused file removed")
		}
		if old == nil || old.fileGone {
			return
		}
		if _, err := s.removeLocked(old, true); err != nil {
			log.Error(err, "file removed by hand, but the object could not be deleted")
			return
		}
		log.Info("file removed by hand: object deleted", "kind", k.gvk.Kind, "namespace", key.namespace, "name", key.name)
		return
	}

	h := hashOf(data)
	if old != nil && !old.fileGone && h == old.fileHash {
		// The store's own write, a touch, or the owner putting back
		// the last good version.
		if s.clearProblem(path) {
			log.Info("refused file is back to its last good version")
		}
		return
	}
	if p, ok := s.problem(path); ok && p.hash == h {
		return
	}
	doc, obj, errs, err := decodeFile(ref, data)
	if err != nil {
		var se *syntaxError
		line := 0
		if errors.As(err, &se) {
			line = se.line
		}
		s.reportFileProblem(path, "", line, err.Error(), data)
		return
	}
	if len(errs) > 0 {
		s.reportFieldProblem(path, doc, errs, data)
		return
	}
	if s.opts.readOnly {
		s.ingestWhole(path, data, old)
		return
	}

	var e *entry
	if old == nil {
		candidate := prepareCreate(k, obj, string(uuid.NewUUID()), s.now().UTC().Format(metav1RFC3339))
		adm, errs := s.admit(k, candidate)
		if len(errs) > 0 {
			s.reportFieldProblem(path, doc, errs, data)
			return
		}
		rv, err := s.rv.next()
		if err != nil {
			log.Error(err, "cannot take a resourceVersion for a hand-written file; it is not loaded")
			return
		}
		adm.setRV(rv)
		e = &entry{kind: k, key: key, rv: rv, obj: adm.obj, typed: adm.typed, fileHash: h}
		s.commit(change{typ: watch.Added, obj: e})
	} else {
		e, err = s.replace(old, prepareUpdate(k, old.obj, obj, false), scopeMain, writeOpts{}, &h)
		if err != nil {
			var status apierrors.APIStatus
			if errors.As(err, &status) && apierrors.IsInvalid(err) {
				if d := status.Status().Details; d != nil {
					s.reportFieldProblem(path, doc, causesToErrors(d.Causes), data)
					return
				}
			}
			s.reportFileProblem(path, "", 0, err.Error(), data)
			return
		}
	}
	if s.clearProblem(path) {
		log.Info("refused file is valid again")
	}
	log.V(1).Info("hand edit applied", "kind", k.gvk.Kind, "namespace", key.namespace, "name", key.name, "resourceVersion", e.rv)
}

// ingestWhole takes a changed file as the object's whole state, status
// and versions included, as Open does. A read-only view uses it: there the
// writes come from the process that owns the store, not from a hand edit.
func (s *Store) ingestWhole(path string, data []byte, old *entry) {
	e, rvOK := s.loadFile(path, data)
	if e == nil {
		return
	}
	s.clearProblem(path)
	if old != nil && sameIgnoringRV(old.obj, e.obj) {
		old.fileHash, old.fileGone = e.fileHash, false
		return
	}
	// Keep the writer's version when it moves forward; otherwise number
	// it here, so the view's history stays in order.
	if !rvOK || e.rv <= s.rv.current {
		rv, err := s.rv.next()
		if err != nil {
			return
		}
		e.rv = rv
		(&admitted{typed: e.typed, obj: e.obj}).setRV(rv)
	}
	s.rv.observe(e.rv)
	typ := watch.Added
	if old != nil {
		typ = watch.Modified
	}
	s.commit(change{typ: typ, obj: e, prev: old})
}

func causesToErrors(causes []metav1.StatusCause) field.ErrorList {
	var errs field.ErrorList
	for _, c := range causes {
		errs = append(errs, &field.Error{Type: field.ErrorType(c.Type), Field: c.Field, Detail: c.Message})
	}
	return errs
}

// reportFieldProblem reports a file refused for field errors.
func (s *Store) reportFieldProblem(path string, doc *yaml.Node, errs field.ErrorList, data []byte) {
	first := errs[0].Field
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	s.reportFileProblem(path, first, fieldLine(doc, first), strings.Join(msgs, "; "), data)
}

// reportFileProblem records a refused file and, the first time this
// content is refused, logs it and records a Warning event on the object
// the file is for.
func (s *Store) reportFileProblem(path, fieldPath string, line int, msg string, data []byte) {
	h := hashOf(data)
	if data == nil {
		h = hashOf([]byte(msg))
	}
	p := Problem{File: path, Field: fieldPath, Line: line, Message: msg, Since: s.opts.now(), hash: h}
	if !s.setProblem(p) {
		return
	}
	s.log.Error(errors.New(msg), "file refused; the last good version keeps serving", "file", path, "field", fieldPath, "line", line)
	ref, ok := s.parsePath(path)
	if !ok || ref.kind == nil || ref.misplaced != "" || ref.kind.gvk == eventGVK {
		return
	}
	objRef := &corev1.ObjectReference{
		APIVersion: ref.kind.gvk.GroupVersion().String(),
		Kind:       ref.kind.gvk.Kind,
		Namespace:  ref.key.namespace,
		Name:       ref.key.name,
	}
	if e := s.lookup(ref.kind, ref.key); e != nil {
		objRef.UID = e.meta().GetUID()
	}
	if s.recorder != nil {
		s.recorder.Event(objRef, corev1.EventTypeWarning, ReasonInvalidFile, p.String())
	}
}

// ReasonInvalidFile is the reason of the Warning event recorded when a
// file in the store is refused.
const ReasonInvalidFile = "InvalidFile"
