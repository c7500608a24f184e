package store

import (
	"context"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// change is one committed change, in version order.
type change struct {
	rv   uint64
	typ  watch.EventType
	obj  *entry // the new state; for Deleted, the last state at the delete's version
	prev *entry // the state before (Modified, Deleted)
}

// maxWatchBacklog bounds the events queued for one slow watcher; past it
// the watch ends with 410 Gone and its reflector relists, as the API
// server does with a watcher that cannot keep up.
const maxWatchBacklog = 100000

func (s *Store) appendHistoryLocked(c change) {
	s.history = append(s.history, c)
	if over := len(s.history) - s.opts.historySize; over > 0 {
		s.floor = s.history[over-1].rv
		// Copy rather than reslice, so the dropped changes can be freed.
		s.history = append([]change(nil), s.history[over:]...)
	}
}

// selector is what a list or watch asks for.
type selector struct {
	namespace string
	labels    labels.Selector
	fields    fields.Selector
	custom    func(*entry) bool
}

func (sel selector) matches(e *entry) bool {
	if sel.namespace != "" && e.key.namespace != sel.namespace {
		return false
	}
	m := e.meta()
	if sel.labels != nil && !sel.labels.Empty() && !sel.labels.Matches(labels.Set(m.GetLabels())) {
		return false
	}
	if sel.fields != nil && !sel.fields.Empty() && !sel.fields.Matches(e.kind.fieldSet(e.typed)) {
		return false
	}
	return sel.custom == nil || sel.custom(e)
}

// checkFields refuses a field selector on a field the kind does not
// offer, as the API server does ("field label not supported").
func checkFields(k *kindInfo, fs fields.Selector) error {
	if fs == nil || fs.Empty() {
		return nil
	}
	known := k.fieldSet(runtimeZero(k))
	for _, r := range fs.Requirements() {
		if _, ok := known[r.Field]; !ok {
			return badRequest("field label not supported: %s", r.Field)
		}
	}
	return nil
}

func runtimeZero(k *kindInfo) runtime.Object {
	if k.gvk == eventGVK {
		return eventZero
	}
	return &metav1.PartialObjectMetadata{}
}

// list is a consistent snapshot of the matching objects, sorted by
// namespace and name, and the version it was taken at.
func (s *Store) list(k *kindInfo, sel selector) ([]*entry, uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*entry, 0, len(s.objects[k]))
	for _, e := range s.objects[k] {
		if sel.matches(e) {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].key.namespace != out[j].key.namespace {
			return out[i].key.namespace < out[j].key.namespace
		}
		return out[i].key.name < out[j].key.name
	})
	return out, s.lastRV
}

// watchRequest is a watch's options, from metav1.ListOptions.
type watchRequest struct {
	sel               selector
	resourceVersion   string
	sendInitialEvents bool
	allowBookmarks    bool
	timeout           time.Duration
	unstructured      bool
}

// watch starts a watch on kind k. Its semantics follow the API server:
//   - sendInitialEvents: ADDED for every object now, then a BOOKMARK
//     annotated k8s.io/initial-events-end, then changes (the WatchList
//     protocol client-go reflectors try first);
//   - resourceVersion "" or "0": ADDED for every object now, then changes;
//   - resourceVersion n: every change after n, or 410 Gone when n is older
//     than the history the store keeps.
func (s *Store) watch(ctx context.Context, k *kindInfo, req watchRequest) (watch.Interface, error) {
	if err := s.ctxErr(ctx); err != nil {
		return nil, err
	}
	var since uint64
	replay := false
	if !req.sendInitialEvents && req.resourceVersion != "" && req.resourceVersion != "0" {
		rv, ok := parseRV(req.resourceVersion)
		if !ok {
			return nil, badRequest("invalid resourceVersion %q", req.resourceVersion)
		}
		since, replay = rv, true
	}

	w := newWatcher(s, k, req)
	s.mu.Lock()
	if replay {
		if since < s.floor {
			s.mu.Unlock()
			return nil, expired(since, s.floor)
		}
		for _, c := range s.history {
			if c.rv > since && c.obj.kind == k {
				w.offer(c)
			}
		}
	} else {
		keys := make([]*entry, 0, len(s.objects[k]))
		for _, e := range s.objects[k] {
			keys = append(keys, e)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i].rv < keys[j].rv })
		for _, e := range keys {
			w.offer(change{rv: e.rv, typ: watch.Added, obj: e})
		}
		if req.sendInitialEvents {
			w.bookmark(s.lastRV, true)
		}
	}
	s.watchers[w] = struct{}{}
	s.mu.Unlock()

	go w.run(ctx)
	return w, nil
}

// watcher is one watch. Changes are queued (under the store's mu) and a
// goroutine of its own converts and sends them, so a slow consumer never
// holds up a write.
type watcher struct {
	s    *Store
	kind *kindInfo
	req  watchRequest

	result chan watch.Event
	done   chan struct{}
	once   sync.Once

	mu      sync.Mutex
	queue   []queued
	signal  chan struct{}
	overrun bool
}

type queued struct {
	c            change
	bookmark     bool
	initialEnd   bool
	bookmarkRV   uint64
	expiredError bool
}

func newWatcher(s *Store, k *kindInfo, req watchRequest) *watcher {
	return &watcher{
		s: s, kind: k, req: req,
		result: make(chan watch.Event),
		done:   make(chan struct{}),
		signal: make(chan struct{}, 1),
	}
}

func (w *watcher) push(q queued) {
	w.mu.Lock()
	if w.overrun {
		w.mu.Unlock()
		return
	}
	if len(w.queue) >= maxWatchBacklog {
		w.overrun = true
		w.queue = append(w.queue[:0], queued{expiredError: true})
	} else {
		w.queue = append(w.queue, q)
	}
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

func (w *watcher) offer(c change) { w.push(queued{c: c}) }

func (w *watcher) bookmark(rv uint64, initialEnd bool) {
	w.push(queued{bookmark: true, initialEnd: initialEnd, bookmarkRV: rv})
}

// ResultChan implements watch.Interface.
func (w *watcher) ResultChan() <-chan watch.Event { return w.result }

// Stop implements watch.Interface.
func (w *watcher) Stop() {
	w.s.mu.Lock()
	w.stopLocked()
	w.s.mu.Unlock()
}

func (w *watcher) stopLocked() {
	w.once.Do(func() {
		delete(w.s.watchers, w)
		close(w.done)
	})
}

func (w *watcher) run(ctx context.Context) {
	defer close(w.result)
	defer w.Stop()
	var timeout <-chan time.Time
	if w.req.timeout > 0 {
		t := time.NewTimer(w.req.timeout)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case <-w.done:
			return
		case <-ctx.Done():
			return
		case <-timeout:
			return
		case <-w.signal:
		}
		w.mu.Lock()
		batch := w.queue
		w.queue = nil
		w.mu.Unlock()
		for _, q := range batch {
			ev, ok := w.event(q)
			if !ok {
				continue
			}
			select {
			case w.result <- ev:
			case <-w.done:
				return
			case <-ctx.Done():
				return
			}
			if q.expiredError {
				return
			}
		}
	}
}

// event turns a queued change into what this watcher sends, applying its
// selector to both sides of a change: an object that starts matching is
// ADDED, one that stops matching is DELETED.
func (w *watcher) event(q queued) (watch.Event, bool) {
	if q.expiredError {
		return watch.Event{Type: watch.Error, Object: &expiredStatus}, true
	}
	if q.bookmark {
		if !w.req.allowBookmarks && !q.initialEnd {
			return watch.Event{}, false
		}
		obj := w.emptyObject()
		m := obj.(metav1.Object)
		m.SetResourceVersion(formatRV(q.bookmarkRV))
		if q.initialEnd {
			m.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
		return watch.Event{Type: watch.Bookmark, Object: obj}, true
	}
	c := q.c
	now := w.req.sel.matches(c.obj)
	before := c.prev != nil && w.req.sel.matches(c.prev)
	typ := c.typ
	switch c.typ {
	case watch.Added:
		if !now {
			return watch.Event{}, false
		}
	case watch.Modified:
		switch {
		case now && before:
		case now:
			typ = watch.Added
		case before:
			typ = watch.Deleted
		default:
			return watch.Event{}, false
		}
	case watch.Deleted:
		if !now {
			return watch.Event{}, false
		}
	}
	return watch.Event{Type: typ, Object: outputObject(c.obj, w.req.unstructured)}, true
}

func (w *watcher) emptyObject() runtime.Object {
	if w.req.unstructured {
		u := outputObject(&entry{obj: map[string]any{}}, true)
		u.GetObjectKind().SetGroupVersionKind(w.kind.gvk)
		return u
	}
	obj, err := w.s.scheme.New(w.kind.gvk)
	if err != nil {
		return &metav1.PartialObjectMetadata{}
	}
	obj.GetObjectKind().SetGroupVersionKind(w.kind.gvk)
	return obj
}

var expiredStatus = metav1.Status{
	Status:  metav1.StatusFailure,
	Code:    410,
	Reason:  metav1.StatusReasonExpired,
	Message: "the watcher fell too far behind; relist",
}
