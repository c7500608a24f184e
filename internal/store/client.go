package store

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Client is a controller-runtime client that reads and writes the store
// directly (no cache): for the CLI, tests and one-shot tools.
func (s *Store) Client() client.WithWatch { return &storeClient{s: s} }

// NewClient matches client.NewClientFunc, for manager.Options.NewClient.
// Like controller-runtime's own client, it reads typed objects through
// options.Cache.Reader when one is given (the manager passes its cache),
// so a controller sees the same eventual consistency here as against an
// API server; writes go to the store. The rest.Config is not used.
func (s *Store) NewClient(_ *rest.Config, options client.Options) (client.Client, error) {
	c := &storeClient{s: s}
	if options.DryRun != nil {
		c.dryRun = *options.DryRun
	}
	if options.Cache != nil && options.Cache.Reader != nil {
		c.cache = options.Cache.Reader
		c.cacheUnstructured = options.Cache.Unstructured
		c.uncached = map[schema.GroupVersionKind]bool{}
		for _, obj := range options.Cache.DisableFor {
			gvk, err := apiutil.GVKForObject(obj, s.scheme)
			if err != nil {
				return nil, fmt.Errorf("cache.DisableFor: %w", err)
			}
			c.uncached[gvk] = true
		}
	}
	return c, nil
}

type storeClient struct {
	s                 *Store
	cache             client.Reader
	cacheUnstructured bool
	uncached          map[schema.GroupVersionKind]bool
	dryRun            bool
}

var _ client.WithWatch = &storeClient{}

func (c *storeClient) bypassCache(obj runtime.Object) (bool, error) {
	if c.cache == nil {
		return true, nil
	}
	switch obj.(type) {
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		// The store's cache holds whole objects only.
		return true, nil
	}
	gvk, err := apiutil.GVKForObject(obj, c.s.scheme)
	if err != nil {
		return false, err
	}
	if meta.IsListType(obj) {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	if c.uncached[gvk] {
		return true, nil
	}
	if _, isU := obj.(runtime.Unstructured); isU && !c.cacheUnstructured {
		return true, nil
	}
	return false, nil
}

func (c *storeClient) key(k *kindInfo, obj client.Object) objKey {
	if !k.namespaced {
		return objKey{"", obj.GetName()}
	}
	return objKey{obj.GetNamespace(), obj.GetName()}
}

// restoreGVK puts back the GVK a caller had set, as controller-runtime's
// client does after Update and Patch.
func restoreGVK(obj runtime.Object, gvk schema.GroupVersionKind) {
	if !gvk.Empty() {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
}

// Get reads one object.
func (c *storeClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if bypass, err := c.bypassCache(obj); err != nil {
		return err
	} else if !bypass {
		return c.cache.Get(ctx, key, obj, opts...)
	}
	k, err := c.kind(ctx, obj)
	if err != nil {
		return err
	}
	if !k.namespaced {
		key.Namespace = ""
	}
	e := c.s.lookup(k, objKey{key.Namespace, key.Name})
	if e == nil {
		return notFound(k, key.Name)
	}
	return fill(e, obj, false)
}

// List reads the objects matching the options (namespace, label
// selector, field selector on metadata.name / metadata.namespace and, for
// events, the API server's event fields). It is one consistent snapshot;
// Limit is honoured, continuation is not offered.
func (c *storeClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if bypass, err := c.bypassCache(list); err != nil {
		return err
	} else if !bypass {
		return c.cache.List(ctx, list, opts...)
	}
	k, err := c.kind(ctx, list)
	if err != nil {
		return err
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if lo.Continue != "" {
		return badRequest("continue is not supported by the file store: its lists are not paginated")
	}
	sel, err := selectorFromListOptions(k, lo)
	if err != nil {
		return err
	}
	entries, rv := c.s.list(k, sel)
	if lo.Limit > 0 && int64(len(entries)) > lo.Limit {
		entries = entries[:lo.Limit]
	}
	return c.s.setList(k, list, entries, rv, isUnstructured(list))
}

func isUnstructured(obj runtime.Object) bool {
	_, ok := obj.(runtime.Unstructured)
	return ok
}

func selectorFromListOptions(k *kindInfo, lo *client.ListOptions) (selector, error) {
	sel := selector{namespace: lo.Namespace, labels: lo.LabelSelector, fields: lo.FieldSelector}
	if !k.namespaced {
		sel.namespace = ""
	}
	if sel.labels == nil {
		sel.labels = labels.Everything()
	}
	if sel.fields == nil {
		sel.fields = fields.Everything()
	}
	return sel, checkFields(k, sel.fields)
}

// Create stores a new object and fills obj with what was stored.
func (c *storeClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	if _, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return fmt.Errorf("cannot create using only metadata")
	}
	k, err := c.kind(ctx, obj)
	if err != nil {
		return err
	}
	co := (&client.CreateOptions{}).ApplyOptions(opts)
	in, err := objectMap(k, obj)
	if err != nil {
		return err
	}
	e, err := c.s.create(k, in, writeOpts{dryRun: c.dryRun || len(co.DryRun) > 0})
	if err != nil {
		return err
	}
	return fill(e, obj, false)
}

// Update replaces an object (not its status) if obj's resourceVersion is
// current.
func (c *storeClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	if _, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return fmt.Errorf("cannot update using only metadata -- did you mean to patch?")
	}
	uo := (&client.UpdateOptions{}).ApplyOptions(opts)
	return c.update(ctx, obj, scopeMain, len(uo.DryRun) > 0)
}

func (c *storeClient) update(ctx context.Context, obj client.Object, scope writeScope, dryRun bool) error {
	defer restoreGVK(obj, obj.GetObjectKind().GroupVersionKind())
	k, err := c.kind(ctx, obj)
	if err != nil {
		return err
	}
	in, err := objectMap(k, obj)
	if err != nil {
		return err
	}
	e, err := c.s.update(k, in, scope, writeOpts{dryRun: c.dryRun || dryRun})
	if err != nil {
		return err
	}
	return fill(e, obj, false)
}

// Patch patches an object (not its status): JSON patch, merge patch, and
// strategic merge patch for built-in kinds.
func (c *storeClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	po := (&client.PatchOptions{}).ApplyOptions(opts)
	return c.patch(ctx, obj, patch, scopeMain, len(po.DryRun) > 0)
}

func (c *storeClient) patch(ctx context.Context, obj client.Object, patch client.Patch, scope writeScope, dryRun bool) error {
	defer restoreGVK(obj, obj.GetObjectKind().GroupVersionKind())
	k, err := c.kind(ctx, obj)
	if err != nil {
		return err
	}
	data, err := patch.Data(obj)
	if err != nil {
		return fmt.Errorf("compute %s patch: %w", patch.Type(), err)
	}
	e, err := c.s.patch(k, c.key(k, obj), patch.Type(), data, scope, writeOpts{dryRun: c.dryRun || dryRun})
	if err != nil {
		return err
	}
	return fill(e, obj, false)
}

// Apply is server-side apply, which the file store does not offer.
func (c *storeClient) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return errApplyUnsupported
}

var errApplyUnsupported = fmt.Errorf("server-side apply is not supported by the file store; use Create, Update or a merge patch")

// kind is the served kind of obj (an object or a list), once ctx is
// checked: the first step of every request.
func (c *storeClient) kind(ctx context.Context, obj runtime.Object) (*kindInfo, error) {
	if err := c.s.ctxErr(ctx); err != nil {
		return nil, err
	}
	return c.s.kindFor(obj)
}

// Delete deletes an object, or marks it for deletion while finalizers
// hold it. Preconditions (UID, resourceVersion) are checked.
func (c *storeClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	k, err := c.kind(ctx, obj)
	if err != nil {
		return err
	}
	do := (&client.DeleteOptions{}).ApplyOptions(opts)
	_, err = c.s.remove(k, c.key(k, obj), do.Preconditions, writeOpts{dryRun: c.dryRun || len(do.DryRun) > 0})
	return err
}

// DeleteAllOf deletes every object of obj's kind matching the options.
func (c *storeClient) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	k, err := c.kind(ctx, obj)
	if err != nil {
		return err
	}
	dao := (&client.DeleteAllOfOptions{}).ApplyOptions(opts)
	sel, err := selectorFromListOptions(k, &dao.ListOptions)
	if err != nil {
		return err
	}
	entries, _ := c.s.list(k, sel)
	for _, e := range entries {
		if _, err := c.s.remove(k, e.key, dao.Preconditions, writeOpts{dryRun: c.dryRun || len(dao.DryRun) > 0}); err != nil && !isNotFound(err) {
			return err
		}
	}
	return nil
}

// Watch watches the objects of list's kind matching the options.
func (c *storeClient) Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
	k, err := c.s.kindFor(list)
	if err != nil {
		return nil, err
	}
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	sel, err := selectorFromListOptions(k, lo)
	if err != nil {
		return nil, err
	}
	req := watchRequest{sel: sel, unstructured: isUnstructured(list)}
	if lo.Raw != nil {
		req.resourceVersion = lo.Raw.ResourceVersion
		req.sendInitialEvents = lo.Raw.SendInitialEvents != nil && *lo.Raw.SendInitialEvents
		req.allowBookmarks = lo.Raw.AllowWatchBookmarks
	}
	return c.s.watch(ctx, k, req)
}

// Status is the status subresource client.
func (c *storeClient) Status() client.SubResourceWriter { return c.SubResource("status") }

// SubResource is a subresource client; the store offers "status" only.
func (c *storeClient) SubResource(name string) client.SubResourceClient {
	return &subResourceClient{c: c, name: name}
}

// Scheme is the store's scheme.
func (c *storeClient) Scheme() *runtime.Scheme { return c.s.scheme }

// RESTMapper is the store's static RESTMapper.
func (c *storeClient) RESTMapper() meta.RESTMapper { return c.s.mapper }

// GroupVersionKindFor answers from the scheme.
func (c *storeClient) GroupVersionKindFor(obj runtime.Object) (schema.GroupVersionKind, error) {
	return apiutil.GVKForObject(obj, c.s.scheme)
}

// IsObjectNamespaced answers from the scheme and the static RESTMapper.
func (c *storeClient) IsObjectNamespaced(obj runtime.Object) (bool, error) {
	return apiutil.IsObjectNamespaced(obj, c.s.scheme, c.s.mapper)
}

type subResourceClient struct {
	c    *storeClient
	name string
}

func (sc *subResourceClient) check(obj client.Object) (*kindInfo, error) {
	k, err := sc.c.s.kindFor(obj)
	if err != nil {
		return nil, err
	}
	if sc.name != "status" || !k.hasStatus {
		return nil, notFound(k, obj.GetName()+"/"+sc.name)
	}
	return k, nil
}

// Get reads the status subresource: the object itself, into subResource.
func (sc *subResourceClient) Get(ctx context.Context, obj, subResource client.Object, _ ...client.SubResourceGetOption) error {
	k, err := sc.check(obj)
	if err != nil {
		return err
	}
	return sc.c.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: obj.GetName()}, subResourceTarget(k, obj, subResource))
}

func subResourceTarget(_ *kindInfo, obj, sub client.Object) client.Object {
	if sub == nil {
		return obj
	}
	return sub
}

// Create is not offered for status.
func (sc *subResourceClient) Create(_ context.Context, obj, _ client.Object, _ ...client.SubResourceCreateOption) error {
	k, err := sc.check(obj)
	if err != nil {
		return err
	}
	return methodNotSupported(k, "create "+sc.name)
}

// Update writes obj's status if its resourceVersion is current; nothing
// else of the object changes.
func (sc *subResourceClient) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	if _, err := sc.check(obj); err != nil {
		return err
	}
	uo := (&client.SubResourceUpdateOptions{}).ApplyOptions(opts)
	target := obj
	if uo.SubResourceBody != nil {
		target = uo.SubResourceBody
	}
	return sc.c.update(ctx, target, scopeStatus, len(uo.DryRun) > 0)
}

// Patch patches obj's status only.
func (sc *subResourceClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if _, err := sc.check(obj); err != nil {
		return err
	}
	po := (&client.SubResourcePatchOptions{}).ApplyOptions(opts)
	return sc.c.patch(ctx, obj, patch, scopeStatus, len(po.DryRun) > 0)
}

// Apply is not offered.
func (sc *subResourceClient) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return errApplyUnsupported
}
