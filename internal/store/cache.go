package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// NewCache matches cache.NewCacheFunc, for manager.Options.NewCache:
// client-go shared index informers over the store's List and Watch, one
// per kind (and per typed/unstructured form). It honours the options
// that shape what is cached (namespaces, label and field selectors,
// transforms, per-object settings, the sync period) and refuses none; the
// rest.Config is not used.
func (s *Store) NewCache(_ *rest.Config, opts cache.Options) (cache.Cache, error) {
	byObject := map[schema.GroupVersionKind]cache.ByObject{}
	for obj, cfg := range opts.ByObject {
		gvk, err := apiutil.GVKForObject(obj, s.scheme)
		if err != nil {
			return nil, fmt.Errorf("cache ByObject: %w", err)
		}
		if _, err := s.kindForGVK(gvk, false); err != nil {
			return nil, fmt.Errorf("cache ByObject %s: %w", gvk, err)
		}
		byObject[gvk] = cfg
	}
	return &informerCache{
		s:         s,
		opts:      opts,
		byObject:  byObject,
		informers: map[informerKey]*storeInformer{},
		startedCh: make(chan struct{}),
	}, nil
}

type informerKey struct {
	gvk          schema.GroupVersionKind
	unstructured bool
}

type informerCache struct {
	s        *Store
	opts     cache.Options
	byObject map[schema.GroupVersionKind]cache.ByObject

	mu        sync.Mutex
	informers map[informerKey]*storeInformer
	started   bool
	ctx       context.Context
	startedCh chan struct{}
}

var _ cache.Cache = &informerCache{}

type storeInformer struct {
	toolscache.SharedIndexInformer
	kind            *kindInfo
	cfg             kindCacheConfig
	cancel          context.CancelFunc
	disableDeepCopy bool
}

// kindCacheConfig is the cache options that apply to one kind.
type kindCacheConfig struct {
	namespaces map[string]cache.Config // nil: every namespace
	labels     labels.Selector
	fields     fields.Selector
	transform  toolscache.TransformFunc
	unsafe     *bool
	syncPeriod *time.Duration
}

func (c *informerCache) configFor(k *kindInfo) kindCacheConfig {
	cfg := kindCacheConfig{
		namespaces: c.opts.DefaultNamespaces,
		labels:     c.opts.DefaultLabelSelector,
		fields:     c.opts.DefaultFieldSelector,
		transform:  c.opts.DefaultTransform,
		unsafe:     c.opts.DefaultUnsafeDisableDeepCopy,
		syncPeriod: c.opts.SyncPeriod,
	}
	if bo, ok := c.byObject[k.gvk]; ok {
		if bo.Namespaces != nil {
			cfg.namespaces = bo.Namespaces
		}
		if bo.Label != nil {
			cfg.labels = bo.Label
		}
		if bo.Field != nil {
			cfg.fields = bo.Field
		}
		if bo.Transform != nil {
			cfg.transform = bo.Transform
		}
		if bo.UnsafeDisableDeepCopy != nil {
			cfg.unsafe = bo.UnsafeDisableDeepCopy
		}
		if bo.SyncPeriod != nil {
			cfg.syncPeriod = bo.SyncPeriod
		}
	}
	if !k.namespaced {
		cfg.namespaces = nil
	}
	return cfg
}

// namespaceConfig is the config of namespace ns, and whether the cache
// holds that namespace at all.
func (cfg kindCacheConfig) namespaceConfig(ns string) (cache.Config, bool) {
	if cfg.namespaces == nil {
		return cache.Config{}, true
	}
	if nc, ok := cfg.namespaces[ns]; ok {
		return nc, true
	}
	nc, ok := cfg.namespaces[cache.AllNamespaces]
	return nc, ok
}

func (cfg kindCacheConfig) holds(e *entry) bool {
	nc, ok := cfg.namespaceConfig(e.key.namespace)
	if !ok {
		return false
	}
	ls, fs := cfg.labels, cfg.fields
	if nc.LabelSelector != nil {
		ls = nc.LabelSelector
	}
	if nc.FieldSelector != nil {
		fs = nc.FieldSelector
	}
	return selector{labels: ls, fields: fs}.matches(e)
}

func (c *informerCache) newInformer(k *kindInfo, unstructuredForm bool) *storeInformer {
	cfg := c.configFor(k)
	lw := &listerWatcher{s: c.s, kind: k, unstructured: unstructuredForm}
	if cfg.namespaces != nil || cfg.labels != nil || cfg.fields != nil {
		lw.narrow = cfg.holds
	}
	var example runtime.Object
	if unstructuredForm {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(k.gvk)
		example = u
	} else {
		example, _ = c.s.scheme.New(k.gvk)
	}
	resync := 10 * time.Hour
	if cfg.syncPeriod != nil {
		resync = *cfg.syncPeriod
	}
	inf := toolscache.NewSharedIndexInformerWithOptions(lw, example, toolscache.SharedIndexInformerOptions{
		ResyncPeriod:      resync,
		Indexers:          toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc},
		ObjectDescription: k.gvk.String(),
	})
	if cfg.transform != nil {
		_ = inf.SetTransform(cfg.transform)
	}
	if c.opts.DefaultWatchErrorHandler != nil {
		_ = inf.SetWatchErrorHandlerWithContext(c.opts.DefaultWatchErrorHandler)
	}
	return &storeInformer{SharedIndexInformer: inf, kind: k, cfg: cfg, disableDeepCopy: cfg.unsafe != nil && *cfg.unsafe}
}

// runLocked starts an informer under the cache's context (c.mu held).
func (c *informerCache) runLocked(inf *storeInformer) {
	ctx, cancel := context.WithCancel(c.ctx)
	inf.cancel = cancel
	go inf.RunWithContext(ctx)
}

// informerFor finds or makes the informer of a kind. It answers whether
// the cache has started; block waits for the informer to sync if so.
func (c *informerCache) informerFor(ctx context.Context, gvk schema.GroupVersionKind, unstructuredForm, block, create bool) (*storeInformer, bool, error) {
	k, err := c.s.kindForGVK(gvk, false)
	if err != nil {
		return nil, false, err
	}
	key := informerKey{gvk, unstructuredForm}
	c.mu.Lock()
	inf := c.informers[key]
	if inf == nil {
		if !create {
			c.mu.Unlock()
			return nil, false, &cache.ErrResourceNotCached{GVK: gvk}
		}
		inf = c.newInformer(k, unstructuredForm)
		c.informers[key] = inf
		if c.started {
			c.runLocked(inf)
		}
	}
	started := c.started
	c.mu.Unlock()
	if block && started && !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, started, apierrors.NewTimeoutError(fmt.Sprintf("failed waiting for %s informer to sync", gvk), 0)
	}
	return inf, started, nil
}

func gvkOf(s *Store, obj runtime.Object) (schema.GroupVersionKind, bool, error) {
	switch obj.(type) {
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return schema.GroupVersionKind{}, false, errors.New("the file store's cache holds whole objects; metadata-only informers are not supported")
	}
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return gvk, false, err
	}
	if meta.IsListType(obj) {
		gvk.Kind = gvk.Kind[:len(gvk.Kind)-len("List")]
	}
	_, isU := obj.(runtime.Unstructured)
	return gvk, isU, nil
}

// GetInformer implements cache.Informers.
func (c *informerCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	gvk, isU, err := gvkOf(c.s, obj)
	if err != nil {
		return nil, err
	}
	return c.getInformer(ctx, gvk, isU, opts)
}

// GetInformerForKind implements cache.Informers.
func (c *informerCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	// A kind known to the scheme gets a typed informer, as in
	// controller-runtime.
	isU := !c.s.scheme.Recognizes(gvk)
	return c.getInformer(ctx, gvk, isU, opts)
}

func (c *informerCache) getInformer(ctx context.Context, gvk schema.GroupVersionKind, isU bool, opts []cache.InformerGetOption) (cache.Informer, error) {
	o := cache.InformerGetOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	block := o.BlockUntilSynced == nil || *o.BlockUntilSynced
	inf, _, err := c.informerFor(ctx, gvk, isU, block, true)
	if err != nil {
		return nil, err
	}
	return inf.SharedIndexInformer, nil
}

// RemoveInformer implements cache.Informers.
func (c *informerCache) RemoveInformer(_ context.Context, obj client.Object) error {
	gvk, isU, err := gvkOf(c.s, obj)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := informerKey{gvk, isU}
	if inf := c.informers[key]; inf != nil {
		if inf.cancel != nil {
			inf.cancel()
		}
		delete(c.informers, key)
	}
	return nil
}

// Start runs every informer and blocks until ctx ends.
func (c *informerCache) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errors.New("the cache was already started")
	}
	c.started, c.ctx = true, ctx
	for _, inf := range c.informers {
		c.runLocked(inf)
	}
	close(c.startedCh)
	c.mu.Unlock()
	<-ctx.Done()
	return nil
}

// WaitForCacheSync waits for Start and then for every informer to sync.
func (c *informerCache) WaitForCacheSync(ctx context.Context) bool {
	select {
	case <-c.startedCh:
	case <-ctx.Done():
		return false
	}
	c.mu.Lock()
	var synced []toolscache.InformerSynced
	for _, inf := range c.informers {
		synced = append(synced, inf.HasSynced)
	}
	c.mu.Unlock()
	return toolscache.WaitForCacheSync(ctx.Done(), synced...)
}

// IndexField adds a field index, with controller-runtime's key layout
// ("field:<name>", values "<namespace>/<value>" and
// "__all_namespaces/<value>"), so List with client.MatchingFields works.
func (c *informerCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	gvk, isU, err := gvkOf(c.s, obj)
	if err != nil {
		return err
	}
	inf, _, err := c.informerFor(ctx, gvk, isU, false, true)
	if err != nil {
		return err
	}
	return inf.AddIndexers(toolscache.Indexers{fieldIndexName(field): func(raw any) ([]string, error) {
		o, ok := raw.(client.Object)
		if !ok {
			return nil, fmt.Errorf("object of type %T is not an Object", raw)
		}
		vals := extract(o)
		ns := o.GetNamespace()
		out := make([]string, 0, 2*len(vals))
		for _, v := range vals {
			out = append(out, namespacedIndexKey(ns, v))
			if ns != "" {
				out = append(out, namespacedIndexKey("", v))
			}
		}
		return out, nil
	}})
}

func fieldIndexName(field string) string { return "field:" + field }

func namespacedIndexKey(ns, v string) string {
	if ns == "" {
		return "__all_namespaces/" + v
	}
	return ns + "/" + v
}

// reader finds the informer that serves a read.
func (c *informerCache) reader(ctx context.Context, obj runtime.Object) (*storeInformer, error) {
	gvk, isU, err := gvkOf(c.s, obj)
	if err != nil {
		return nil, err
	}
	inf, started, err := c.informerFor(ctx, gvk, isU, true, !c.opts.ReaderFailOnMissingInformer)
	if err != nil {
		return nil, err
	}
	if !started {
		return nil, &cache.ErrCacheNotStarted{}
	}
	return inf, nil
}

// Get reads one object from the cache.
func (c *informerCache) Get(ctx context.Context, key client.ObjectKey, out client.Object, opts ...client.GetOption) error {
	inf, err := c.reader(ctx, out)
	if err != nil {
		return err
	}
	k := inf.kind
	if !k.namespaced {
		key.Namespace = ""
	} else if _, ok := inf.cfg.namespaceConfig(key.Namespace); !ok {
		return fmt.Errorf("unable to get %s: namespace %q is not in the cache's namespaces", key, key.Namespace)
	}
	storeKey := key.Name
	if key.Namespace != "" {
		storeKey = key.Namespace + "/" + key.Name
	}
	item, exists, err := inf.GetIndexer().GetByKey(storeKey)
	if err != nil {
		return err
	}
	if !exists {
		return notFound(k, key.Name)
	}
	go_ := (&client.GetOptions{}).ApplyOptions(opts)
	return copyCached(item, out, k.gvk, !(inf.disableDeepCopy || go_.UnsafeDisableDeepCopy != nil && *go_.UnsafeDisableDeepCopy))
}

// copyCached sets out to a cached object (deep-copied unless told not
// to) with its GVK set, as controller-runtime's cache reader does.
func copyCached(item any, out runtime.Object, gvk schema.GroupVersionKind, deepCopy bool) error {
	obj, ok := item.(runtime.Object)
	if !ok {
		return fmt.Errorf("cache holds %T, which is not an object", item)
	}
	if deepCopy {
		obj = obj.DeepCopyObject()
	}
	outVal, objVal := reflect.ValueOf(out), reflect.ValueOf(obj)
	if !objVal.Type().AssignableTo(outVal.Type()) {
		return fmt.Errorf("cache had type %s, but %s was asked for", objVal.Type(), outVal.Type())
	}
	reflect.Indirect(outVal).Set(reflect.Indirect(objVal))
	if deepCopy {
		out.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return nil
}

// List reads objects from the cache: namespace, label selector, and
// exact-match field selectors (on field indexes, or on metadata.name and
// metadata.namespace without one).
func (c *informerCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	inf, err := c.reader(ctx, list)
	if err != nil {
		return err
	}
	k := inf.kind
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if lo.Continue != "" {
		return errors.New("continue list option is not supported by the cache")
	}
	ns := lo.Namespace
	if !k.namespaced {
		ns = ""
	}
	var items []any
	var post []fields.Requirement
	indexer := inf.GetIndexer()
	switch {
	case lo.FieldSelector != nil && !lo.FieldSelector.Empty():
		reqs := lo.FieldSelector.Requirements()
		for _, r := range reqs {
			if r.Operator != selection.Equals && r.Operator != selection.DoubleEquals {
				return errors.New("non-exact field matches are not supported by the cache")
			}
		}
		indexers := indexer.GetIndexers()
		first := -1
		for i, r := range reqs {
			if _, ok := indexers[fieldIndexName(r.Field)]; ok {
				first = i
				break
			}
		}
		if first >= 0 {
			items, err = indexer.ByIndex(fieldIndexName(reqs[first].Field), namespacedIndexKey(ns, reqs[first].Value))
			post = append(slices.Clone(reqs[:first]), reqs[first+1:]...)
		} else {
			items, err = listNamespace(indexer, ns)
			post = reqs
		}
	default:
		items, err = listNamespace(indexer, ns)
	}
	if err != nil {
		return err
	}
	for _, r := range post {
		if _, ok := indexer.GetIndexers()[fieldIndexName(r.Field)]; !ok && r.Field != "metadata.name" && r.Field != "metadata.namespace" {
			return fmt.Errorf("index with name %s does not exist", fieldIndexName(r.Field))
		}
	}
	deepCopy := !(inf.disableDeepCopy || lo.UnsafeDisableDeepCopy != nil && *lo.UnsafeDisableDeepCopy)
	out := make([]runtime.Object, 0, len(items))
	for _, item := range items {
		if lo.Limit > 0 && int64(len(out)) >= lo.Limit {
			break
		}
		obj, ok := item.(client.Object)
		if !ok {
			return fmt.Errorf("cache holds %T, which is not an object", item)
		}
		if ns != "" && obj.GetNamespace() != ns {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(obj.GetLabels())) {
			continue
		}
		if !matchesRequirements(indexer, obj, post) {
			continue
		}
		if deepCopy {
			cp := obj.DeepCopyObject()
			cp.GetObjectKind().SetGroupVersionKind(k.gvk)
			out = append(out, cp)
		} else {
			out = append(out, obj)
		}
	}
	if ul, ok := list.(*unstructured.UnstructuredList); ok {
		ul.Items = make([]unstructured.Unstructured, 0, len(out))
		for _, o := range out {
			ul.Items = append(ul.Items, *o.(*unstructured.Unstructured))
		}
		ul.SetContinue("continue-not-supported")
		return nil
	}
	if err := meta.SetList(list, out); err != nil {
		return err
	}
	list.SetContinue("continue-not-supported")
	return nil
}

func listNamespace(indexer toolscache.Indexer, ns string) ([]any, error) {
	if ns == "" {
		return indexer.List(), nil
	}
	return indexer.ByIndex(toolscache.NamespaceIndex, ns)
}

func matchesRequirements(indexer toolscache.Indexer, obj client.Object, reqs []fields.Requirement) bool {
	for _, r := range reqs {
		switch fn, ok := indexer.GetIndexers()[fieldIndexName(r.Field)]; {
		case ok:
			vals, err := fn(obj)
			if err != nil || !slices.Contains(vals, namespacedIndexKey(obj.GetNamespace(), r.Value)) {
				return false
			}
		case r.Field == "metadata.name":
			if obj.GetName() != r.Value {
				return false
			}
		case r.Field == "metadata.namespace":
			if obj.GetNamespace() != r.Value {
				return false
			}
		}
	}
	return true
}
