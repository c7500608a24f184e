package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"

	"go.yaml.in/yaml/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
)

// writeScope says which part of an object a write may change.
type writeScope int

const (
	scopeMain   writeScope = iota // everything but status and managed metadata
	scopeStatus                   // status only (and, in a file, only the metadata and status nodes)
)

// writeOpts carry the per-call options of a write.
type writeOpts struct {
	dryRun bool
}

// create stores a new object. in is the request as a JSON-like map.
func (s *Store) create(k *kindInfo, in map[string]any, o writeOpts) (*entry, error) {
	if s.opts.readOnly {
		return nil, errReadOnly
	}
	m := metaOf(in)
	name, _ := m["name"].(string)
	if name == "" {
		prefix, _ := m["generateName"].(string)
		if prefix == "" {
			return nil, invalidError(k, "", field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
		}
		name = prefix + rand.String(5)
		m["name"] = name
	}
	if rv, _ := m["resourceVersion"].(string); rv != "" {
		return nil, badRequest("resourceVersion should not be set on objects to be created")
	}
	ns, _ := m["namespace"].(string)
	if k.namespaced && ns == "" {
		return nil, invalidError(k, name, field.ErrorList{field.Required(field.NewPath("metadata", "namespace"), "")})
	}
	if !k.namespaced {
		ns = ""
	}
	key := objKey{ns, name}

	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.isClosed() {
		return nil, errors.New("the store is closed")
	}

	candidate := prepareCreate(k, in, string(uuid.NewUUID()), s.now().UTC().Format(metav1RFC3339))
	adm, errs := s.admit(k, candidate)
	if len(errs) > 0 {
		return nil, invalidError(k, name, errs)
	}
	if s.lookup(k, key) != nil {
		return nil, apierrors.NewAlreadyExists(k.groupResource(), name)
	}
	path := k.path(s.dir, key)
	if p, ok := s.problem(path); ok {
		return nil, badFileConflict(k, name, p)
	}
	if _, err := os.Lstat(path); err == nil {
		// A file the store has not loaded yet: a hand edit in flight.
		s.scheduleCheck(path)
		return nil, apierrors.NewAlreadyExists(k.groupResource(), name)
	}
	if o.dryRun {
		return &entry{kind: k, key: key, obj: adm.obj, typed: adm.typed}, nil
	}
	if k.gvk == eventGVK {
		// Make room first, so no reader ever sees more than the limit.
		s.pruneEventsLocked(ns, s.opts.maxEventsPerNS-1)
	}
	rv, err := s.rv.next()
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	adm.setRV(rv)
	e := &entry{kind: k, key: key, rv: rv, obj: adm.obj, typed: adm.typed}
	if err := s.writeEntryFile(e, nil, scopeMain); err != nil {
		return nil, err
	}
	s.commit(change{typ: watch.Added, obj: e})
	return e, nil
}

// update replaces an object (scopeMain) or its status (scopeStatus).
func (s *Store) update(k *kindInfo, in map[string]any, scope writeScope, o writeOpts) (*entry, error) {
	if s.opts.readOnly {
		return nil, errReadOnly
	}
	if scope == scopeStatus && !k.hasStatus {
		return nil, notFound(k, metaString(in, "name")+"/status")
	}
	key := objKey{metaString(in, "namespace"), metaString(in, "name")}
	if !k.namespaced {
		key.namespace = ""
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	old, err := s.writable(k, key)
	if err != nil {
		return nil, err
	}
	switch rv := metaString(in, "resourceVersion"); {
	case rv == "" && !k.builtin:
		return nil, invalidError(k, key.name, field.ErrorList{field.Invalid(field.NewPath("metadata", "resourceVersion"), "", "must be specified for an update")})
	case rv != "" && rv != formatRV(old.rv):
		return nil, staleConflict(k, key.name)
	}
	if err := checkUID(old, in); err != nil {
		return nil, err
	}
	return s.replace(old, prepareUpdate(k, old.obj, in, scope == scopeStatus), scope, o, nil)
}

// checkUID refuses a write meant for an earlier object of the same name
// (deleted and created again since), as the API server's UID
// precondition does.
func checkUID(old *entry, in map[string]any) error {
	if uid := metaString(in, "uid"); uid != "" && uid != string(old.meta().GetUID()) {
		return apierrors.NewConflict(old.kind.groupResource(), old.key.name,
			fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", uid, old.meta().GetUID()))
	}
	return nil
}

// writable is the current entry of a key, if a write may replace it.
func (s *Store) writable(k *kindInfo, key objKey) (*entry, error) {
	if s.isClosed() {
		return nil, errors.New("the store is closed")
	}
	old := s.lookup(k, key)
	if old == nil {
		return nil, notFound(k, key.name)
	}
	if p, ok := s.problem(k.path(s.dir, key)); ok {
		return nil, badFileConflict(k, key.name, p)
	}
	return old, nil
}

// replace admits candidate as the next version of old and commits it.
// ingested is set for a hand edit already on disk: the file is not
// written, and its hash is recorded instead.
func (s *Store) replace(old *entry, candidate map[string]any, scope writeScope, o writeOpts, ingested *fileHash) (*entry, error) {
	k := old.kind
	if n, ns := metaString(candidate, "name"), metaString(candidate, "namespace"); n != old.key.name || (k.namespaced && ns != old.key.namespace) {
		return nil, invalidError(k, old.key.name, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), n+" in "+ns, "name and namespace cannot change")})
	}
	adm, errs := s.admit(k, candidate)
	if len(errs) == 0 {
		adm.setRV(old.rv)
		errs = validateTransition(old.typed, adm.typed)
	}
	if len(errs) == 0 && old.deleting() {
		if added := addedFinalizers(old.finalizers(), adm.finalizers()); len(added) > 0 {
			errs = field.ErrorList{field.Forbidden(field.NewPath("metadata", "finalizers"), fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %q", added))}
		}
	}
	if len(errs) > 0 {
		return nil, invalidError(k, old.key.name, errs)
	}
	if sameIgnoringRV(old.obj, adm.obj) {
		if ingested != nil {
			old.fileHash, old.fileGone = *ingested, false
		}
		return old, nil
	}
	if !specEqual(old.obj, adm.obj) {
		adm.setGeneration(generationOf(old.typed) + 1)
	}
	if o.dryRun {
		return &entry{kind: k, key: old.key, rv: old.rv, obj: adm.obj, typed: adm.typed}, nil
	}
	if old.deleting() && len(adm.finalizers()) == 0 {
		// The last finalizer is gone: the delete completes now.
		return s.deleteNow(old, adm)
	}
	rv, err := s.rv.next()
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	adm.setRV(rv)
	e := &entry{kind: k, key: old.key, rv: rv, obj: adm.obj, typed: adm.typed, fileGone: old.fileGone && ingested == nil}
	switch {
	case ingested != nil:
		e.fileHash = *ingested
	case e.fileGone:
	default:
		if err := s.writeEntryFile(e, old, scope); err != nil {
			return nil, err
		}
	}
	s.commit(change{typ: watch.Modified, obj: e, prev: old})
	return e, nil
}

// remove deletes an object, or marks it for deletion while finalizers
// hold it.
func (s *Store) remove(k *kindInfo, key objKey, pre *metav1.Preconditions, o writeOpts) (*entry, error) {
	if s.opts.readOnly {
		return nil, errReadOnly
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.isClosed() {
		return nil, errors.New("the store is closed")
	}
	old, err := s.writable(k, key)
	if err != nil {
		return nil, err
	}
	if pre != nil {
		m, _ := meta.Accessor(old.typed)
		if pre.UID != nil && *pre.UID != m.GetUID() {
			return nil, apierrors.NewConflict(k.groupResource(), key.name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, m.GetUID()))
		}
		if pre.ResourceVersion != nil && *pre.ResourceVersion != formatRV(old.rv) {
			return nil, apierrors.NewConflict(k.groupResource(), key.name, fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pre.ResourceVersion, old.rv))
		}
	}
	if o.dryRun {
		return old, nil
	}
	return s.removeLocked(old, false)
}

// removeLocked is remove's work under writeMu. fileGone says the owner
// already removed the file.
func (s *Store) removeLocked(old *entry, fileGone bool) (*entry, error) {
	if len(old.finalizers()) == 0 {
		if fileGone {
			old.fileGone = true
		}
		return s.deleteNow(old, nil)
	}
	if old.deleting() {
		if fileGone && !old.fileGone {
			old.fileGone = true
		}
		return old, nil
	}
	next := runtime.DeepCopyJSON(old.obj)
	m := metaOf(next)
	m["deletionTimestamp"] = s.now().UTC().Format(metav1RFC3339)
	m["deletionGracePeriodSeconds"] = int64(0)
	delete(m, "resourceVersion")
	adm, errs := s.admit(old.kind, next)
	if len(errs) > 0 {
		return nil, invalidError(old.kind, old.key.name, errs)
	}
	// The API server bumps generation when it marks an object for
	// deletion, so generation-filtered watchers still see it.
	adm.setGeneration(generationOf(old.typed) + 1)
	rv, err := s.rv.next()
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	adm.setRV(rv)
	e := &entry{kind: old.kind, key: old.key, rv: rv, obj: adm.obj, typed: adm.typed, fileGone: old.fileGone || fileGone}
	if !e.fileGone {
		if err := s.writeEntryFile(e, old, scopeMain); err != nil {
			return nil, err
		}
	}
	s.commit(change{typ: watch.Modified, obj: e, prev: old})
	return e, nil
}

// deleteNow removes an object for good. final, if set, is its last state
// (an update that removed the last finalizer); otherwise old's.
func (s *Store) deleteNow(old *entry, final *admitted) (*entry, error) {
	rv, err := s.rv.next()
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if final == nil {
		final = &admitted{typed: old.typed.DeepCopyObject(), obj: runtime.DeepCopyJSON(old.obj)}
	}
	// The DELETED event carries the version of the delete, as the API
	// server's does.
	final.setRV(rv)
	path := old.kind.path(s.dir, old.key)
	if !old.fileGone {
		if err := s.checkFileUnchanged(old, path); err != nil {
			return nil, err
		}
		if err := removeFile(path); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	s.clearProblem(path)
	e := &entry{kind: old.kind, key: old.key, rv: rv, obj: final.obj, typed: final.typed, fileGone: true}
	s.commit(change{typ: watch.Deleted, obj: e, prev: old})
	return e, nil
}

// writeEntryFile writes e's file. prev is the entry the file holds now
// (nil for a new object); its file must still be what the store last saw,
// else the owner edited it meanwhile and the write is refused.
func (s *Store) writeEntryFile(e *entry, prev *entry, scope writeScope) error {
	path := e.kind.path(s.dir, e.key)
	if prev != nil && specEqual(prev.obj, e.obj) {
		// Nothing but metadata or status changed: leave the rest of
		// the file as it is, whatever scope the write had.
		scope = scopeStatus
	}
	var prevData []byte
	if prev != nil && !prev.fileGone {
		data, err := readFileLimited(path)
		if err != nil || hashOf(data) != prev.fileHash {
			s.scheduleCheck(path)
			return handEditConflict(e.kind, e.key.name, path)
		}
		prevData = data
	}
	data, err := s.render(e, prevData, scope)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("render %s: %w", path, err))
	}
	check := func() error {
		if prev == nil || prev.fileGone {
			if _, err := os.Lstat(path); err == nil {
				s.scheduleCheck(path)
				return apierrors.NewAlreadyExists(e.kind.groupResource(), e.key.name)
			}
			return nil
		}
		return s.checkFileUnchanged(prev, path)
	}
	if err := writeFileAtomic(path, data, check); err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return err
		}
		return apierrors.NewInternalError(fmt.Errorf("write %s: %w", path, err))
	}
	e.fileHash = hashOf(data)
	return nil
}

func (s *Store) checkFileUnchanged(prev *entry, path string) error {
	data, err := readFileLimited(path)
	if err != nil || hashOf(data) != prev.fileHash {
		s.scheduleCheck(path)
		return handEditConflict(prev.kind, prev.key.name, path)
	}
	return nil
}

// render is the file content for e. With prevData (the file as it is) it
// edits that file's node tree; a status write touches only the metadata
// and status nodes, so an owner's spec keeps its exact text.
func (s *Store) render(e *entry, prevData []byte, scope writeScope) ([]byte, error) {
	raw, err := json.Marshal(e.typed)
	if err != nil {
		return nil, err
	}
	root, err := jsonNode(raw)
	if err != nil {
		return nil, err
	}
	if pruned := cloneNode(root); s.sameObject(e, pruned) {
		root = pruned
	}
	if prevData != nil {
		if doc, err := parseDocument(prevData); err == nil {
			old := doc.Content[0]
			if scope == scopeStatus {
				root = statusOnly(old, root)
			}
			doc.Content[0] = mergeNode(old, root)
			return encodeDocument(doc)
		}
	}
	return encodeDocument(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}})
}

// statusOnly is the tree a status write merges into the file: the
// metadata and status of the new object, and every other key exactly as
// the file has it (so an owner's spec keeps its text, even where the
// stored object holds a default the file leaves out).
func statusOnly(old, root *yaml.Node) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		switch k.Value {
		case "metadata", "status":
			out.Content = append(out.Content, k, root.Content[i+1])
		default:
			if v := mappingValue(old, k.Value); v != nil {
				out.Content = append(out.Content, k, v)
			}
		}
	}
	return out
}

// sameObject prunes empty values from n and reports whether it still
// decodes to exactly e's object (a nil pointer and a pointer to an empty
// struct differ, so pruning is checked, not assumed).
func (s *Store) sameObject(e *entry, n *yaml.Node) bool {
	pruneEmpty(n)
	v, err := nodeValue(n, "")
	if err != nil {
		return false
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	typed, err := s.scheme.New(e.kind.gvk)
	if err != nil || runtime.DefaultUnstructuredConverter.FromUnstructured(m, typed) != nil {
		return false
	}
	back, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return false
	}
	back["apiVersion"], back["kind"] = e.obj["apiVersion"], e.obj["kind"]
	return reflect.DeepEqual(back, e.obj)
}

func cloneNode(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	if n.Content != nil {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, ch := range n.Content {
			c.Content[i] = cloneNode(ch)
		}
	}
	return &c
}

// commit publishes a change: the in-memory view, the history and every
// watch move together, in version order (callers hold writeMu).
func (s *Store) commit(c change) {
	c.rv = c.obj.rv
	s.mu.Lock()
	defer s.mu.Unlock()
	byKey := s.objects[c.obj.kind]
	if c.typ == watch.Deleted {
		delete(byKey, c.obj.key)
	} else {
		byKey[c.obj.key] = c.obj
	}
	s.lastRV = c.rv
	s.appendHistoryLocked(c)
	for w := range s.watchers {
		if w.kind == c.obj.kind {
			w.offer(c)
		}
	}
}

func (s *Store) lookup(k *kindInfo, key objKey) *entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.objects[k][key]
}

// Entry accessors; entries are read-only, so these read without locks.

func (e *entry) meta() metav1.Object {
	m, _ := meta.Accessor(e.typed)
	return m
}

func (e *entry) finalizers() []string { return e.meta().GetFinalizers() }

func (e *entry) deleting() bool { return e.meta().GetDeletionTimestamp() != nil }

func generationOf(obj runtime.Object) int64 {
	m, err := meta.Accessor(obj)
	if err != nil {
		return 0
	}
	return m.GetGeneration()
}

func (a *admitted) finalizers() []string {
	m, _ := meta.Accessor(a.typed)
	return m.GetFinalizers()
}

func (a *admitted) setRV(rv uint64) {
	m, _ := meta.Accessor(a.typed)
	if rv == 0 {
		m.SetResourceVersion("")
		delete(metaOf(a.obj), "resourceVersion")
		return
	}
	m.SetResourceVersion(formatRV(rv))
	metaOf(a.obj)["resourceVersion"] = formatRV(rv)
}

func (a *admitted) setGeneration(g int64) {
	m, _ := meta.Accessor(a.typed)
	m.SetGeneration(g)
	metaOf(a.obj)["generation"] = g
}

// metav1RFC3339 is the layout metav1.Time marshals to.
const metav1RFC3339 = "2006-01-02T15:04:05Z07:00"
