package store

import (
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// kindFor finds the served kind of an object or list, typed or
// unstructured; an unknown kind is a NoKindMatchError, as from a real
// RESTMapper.
func (s *Store) kindFor(obj runtime.Object) (*kindInfo, error) {
	gvk, err := apiutil.GVKForObject(obj, s.scheme)
	if err != nil {
		return nil, err
	}
	return s.kindForGVK(gvk, meta.IsListType(obj))
}

func (s *Store) kindForGVK(gvk schema.GroupVersionKind, isList bool) (*kindInfo, error) {
	if isList {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	if k, ok := s.kinds[gvk]; ok {
		return k, nil
	}
	return nil, &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
}

// objectMap is a caller's object as a fresh JSON-like map with its type
// meta filled in.
func objectMap(k *kindInfo, obj runtime.Object) (map[string]any, error) {
	var m map[string]any
	if u, ok := obj.(runtime.Unstructured); ok {
		m = runtime.DeepCopyJSON(u.UnstructuredContent())
	} else {
		var err error
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return nil, fmt.Errorf("convert %T: %w", obj, err)
		}
	}
	m["apiVersion"], m["kind"] = k.gvk.GroupVersion().String(), k.gvk.Kind
	return m, nil
}

// fill copies an entry into a caller's object. Typed objects come back
// with empty TypeMeta unless keepGVK, as from controller-runtime's real
// client (its decoder drops the GVK); unstructured ones keep apiVersion
// and kind.
func fill(e *entry, out runtime.Object, keepGVK bool) error {
	switch o := out.(type) {
	case *unstructured.Unstructured:
		o.Object = runtime.DeepCopyJSON(e.obj)
		return nil
	case runtime.Unstructured:
		o.SetUnstructuredContent(runtime.DeepCopyJSON(e.obj))
		return nil
	case *metav1.PartialObjectMetadata:
		m, err := meta.Accessor(e.typed)
		if err != nil {
			return err
		}
		o.TypeMeta = metav1.TypeMeta{APIVersion: e.kind.gvk.GroupVersion().String(), Kind: e.kind.gvk.Kind}
		o.ObjectMeta = *asObjectMeta(m)
		return nil
	}
	cp := e.typed.DeepCopyObject()
	outVal, cpVal := reflect.ValueOf(out), reflect.ValueOf(cp)
	if outVal.Kind() != reflect.Pointer || outVal.IsNil() {
		return fmt.Errorf("need a non-nil pointer to fill, got %T", out)
	}
	if !cpVal.Type().AssignableTo(outVal.Type()) {
		return fmt.Errorf("the store holds %s as %T, but %T was asked for", e.kind.gvk.Kind, cp, out)
	}
	reflect.Indirect(outVal).Set(reflect.Indirect(cpVal))
	if !keepGVK {
		out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	return nil
}

func asObjectMeta(m metav1.Object) *metav1.ObjectMeta {
	if om, ok := m.(*metav1.ObjectMeta); ok {
		return om.DeepCopy()
	}
	return &metav1.ObjectMeta{
		Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
		ResourceVersion: m.GetResourceVersion(), Generation: m.GetGeneration(),
		CreationTimestamp: m.GetCreationTimestamp(), DeletionTimestamp: m.GetDeletionTimestamp(),
		Labels: m.GetLabels(), Annotations: m.GetAnnotations(), Finalizers: m.GetFinalizers(),
		OwnerReferences: m.GetOwnerReferences(),
	}
}

// outputObject is a fresh copy of an entry in the form a consumer wants:
// typed (GVK set) or unstructured.
func outputObject(e *entry, unstructuredOut bool) runtime.Object {
	if unstructuredOut {
		return &unstructured.Unstructured{Object: runtime.DeepCopyJSON(e.obj)}
	}
	return e.typed.DeepCopyObject()
}

// setList fills a list object with entries (already filtered).
func (s *Store) setList(k *kindInfo, list runtime.Object, entries []*entry, rv uint64, keepGVK bool) error {
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		l.Items = make([]unstructured.Unstructured, 0, len(entries))
		for _, e := range entries {
			l.Items = append(l.Items, unstructured.Unstructured{Object: runtime.DeepCopyJSON(e.obj)})
		}
		l.SetAPIVersion(k.listGVK.GroupVersion().String())
		l.SetKind(k.listGVK.Kind)
		l.SetResourceVersion(formatRV(rv))
		return nil
	case *metav1.PartialObjectMetadataList:
		l.Items = make([]metav1.PartialObjectMetadata, 0, len(entries))
		for _, e := range entries {
			var p metav1.PartialObjectMetadata
			if err := fill(e, &p, true); err != nil {
				return err
			}
			l.Items = append(l.Items, p)
		}
		l.ResourceVersion = formatRV(rv)
		return nil
	}
	objs := make([]runtime.Object, 0, len(entries))
	for _, e := range entries {
		o := e.typed.DeepCopyObject()
		if !keepGVK {
			o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
		}
		objs = append(objs, o)
	}
	if err := meta.SetList(list, objs); err != nil {
		return fmt.Errorf("fill %T: %w", list, err)
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return err
	}
	lm.SetResourceVersion(formatRV(rv))
	lm.SetContinue("")
	if !keepGVK {
		list.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	return nil
}

func newUnstructuredList() *unstructured.UnstructuredList { return &unstructured.UnstructuredList{} }
