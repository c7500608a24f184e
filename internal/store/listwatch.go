package store

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// listerWatcher serves client-go reflectors from the store, for one kind,
// optionally narrowed (a cache restricted to namespaces or selectors).
// It implements toolscache.ListerWatcherWithContext, and serves the
// WatchList protocol (sendInitialEvents with the initial-events-end
// bookmark), so reflectors need no fallback.
type listerWatcher struct {
	s            *Store
	kind         *kindInfo
	unstructured bool
	// narrow, if set, further filters what the cache holds.
	narrow func(*entry) bool
}

var _ toolscache.ListerWatcherWithContext = &listerWatcher{}
var _ toolscache.ListerWatcher = &listerWatcher{}

func (lw *listerWatcher) selectorFrom(opts metav1.ListOptions) (selector, error) {
	sel := selector{labels: labels.Everything(), fields: fields.Everything()}
	if opts.LabelSelector != "" {
		ls, err := labels.Parse(opts.LabelSelector)
		if err != nil {
			return sel, badRequest("invalid label selector %q: %v", opts.LabelSelector, err)
		}
		sel.labels = ls
	}
	if opts.FieldSelector != "" {
		fs, err := fields.ParseSelector(opts.FieldSelector)
		if err != nil {
			return sel, badRequest("invalid field selector %q: %v", opts.FieldSelector, err)
		}
		if err := checkFields(lw.kind, fs); err != nil {
			return sel, err
		}
		sel.fields = fs
	}
	return sel, nil
}

// ListWithContext lists the kind. Pagination is not offered: the list is
// one consistent snapshot.
func (lw *listerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	if err := lw.s.ctxErr(ctx); err != nil {
		return nil, err
	}
	sel, err := lw.selectorFrom(opts)
	if err != nil {
		return nil, err
	}
	entries, rv := lw.s.list(lw.kind, sel)
	entries = lw.filter(entries)
	var list runtime.Object
	if lw.unstructured {
		list = newUnstructuredList()
	} else if list, err = lw.s.scheme.New(lw.kind.listGVK); err != nil {
		return nil, err
	}
	if err := lw.s.setList(lw.kind, list, entries, rv, true); err != nil {
		return nil, err
	}
	list.GetObjectKind().SetGroupVersionKind(lw.kind.listGVK)
	return list, nil
}

func (lw *listerWatcher) filter(entries []*entry) []*entry {
	if lw.narrow == nil {
		return entries
	}
	out := entries[:0]
	for _, e := range entries {
		if lw.narrow(e) {
			out = append(out, e)
		}
	}
	return out
}

// WatchWithContext watches the kind.
func (lw *listerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	sel, err := lw.selectorFrom(opts)
	if err != nil {
		return nil, err
	}
	if lw.narrow != nil {
		inner := sel
		sel = selector{labels: labels.Everything(), fields: fields.Everything()}
		sel.custom = func(e *entry) bool { return inner.matches(e) && lw.narrow(e) }
	}
	req := watchRequest{
		sel:               sel,
		resourceVersion:   opts.ResourceVersion,
		sendInitialEvents: opts.SendInitialEvents != nil && *opts.SendInitialEvents,
		allowBookmarks:    opts.AllowWatchBookmarks,
		unstructured:      lw.unstructured,
	}
	if opts.TimeoutSeconds != nil {
		req.timeout = time.Duration(*opts.TimeoutSeconds) * time.Second
	}
	return lw.s.watch(ctx, lw.kind, req)
}

// List implements the older toolscache.Lister.
func (lw *listerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

// Watch implements the older toolscache.Watcher.
func (lw *listerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}
