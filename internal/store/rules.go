package store

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// The pure rules of a write: which parts of the object a write may change.
// They work on JSON-like maps and touch nothing else.

// managedMeta are the metadata fields only the store sets; a write's
// values for them are ignored.
var managedMeta = []string{"uid", "creationTimestamp", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"}

// droppedMeta are fields the store does not keep at all.
var droppedMeta = []string{"resourceVersion", "managedFields", "selfLink"}

func metaOf(obj map[string]any) map[string]any {
	m, _ := obj["metadata"].(map[string]any)
	if m == nil {
		m = map[string]any{}
		obj["metadata"] = m
	}
	return m
}

func metaString(obj map[string]any, key string) string {
	m, _ := obj["metadata"].(map[string]any)
	s, _ := m[key].(string)
	return s
}

// prepareCreate is a create request made ready for admission: managed
// fields set by the store, status dropped where it is a subresource (the
// API server ignores status on create for such kinds).
func prepareCreate(k *kindInfo, in map[string]any, uid, now string) map[string]any {
	out := runtime.DeepCopyJSON(in)
	m := metaOf(out)
	for _, f := range append(managedMeta, droppedMeta...) {
		delete(m, f)
	}
	m["uid"] = uid
	m["creationTimestamp"] = now
	m["generation"] = int64(1)
	if !k.namespaced {
		delete(m, "namespace")
	}
	if k.hasStatus {
		delete(out, "status")
	}
	return out
}

// prepareUpdate is an update request made ready for admission.
//
// A main write takes everything from the request but the managed
// metadata, and, where status is a subresource, the status, which stay
// as they were. A status write takes only the status from the request.
func prepareUpdate(k *kindInfo, old, in map[string]any, status bool) map[string]any {
	if status {
		out := runtime.DeepCopyJSON(old)
		if st, ok := in["status"]; ok {
			out["status"] = runtime.DeepCopyJSONValue(st)
		} else {
			delete(out, "status")
		}
		delete(metaOf(out), "resourceVersion")
		return out
	}
	out := runtime.DeepCopyJSON(in)
	m := metaOf(out)
	oldMeta := metaOf(old)
	for _, f := range droppedMeta {
		delete(m, f)
	}
	if !k.namespaced {
		delete(m, "namespace")
	}
	for _, f := range managedMeta {
		if v, ok := oldMeta[f]; ok && v != nil {
			m[f] = runtime.DeepCopyJSONValue(v)
		} else {
			delete(m, f)
		}
	}
	if k.hasStatus {
		if st, ok := old["status"]; ok {
			out["status"] = runtime.DeepCopyJSONValue(st)
		} else {
			delete(out, "status")
		}
	}
	return out
}

// addedFinalizers lists finalizers in next that are not in prev.
func addedFinalizers(prev, next []string) []string {
	have := make(map[string]bool, len(prev))
	for _, f := range prev {
		have[f] = true
	}
	var added []string
	for _, f := range next {
		if !have[f] {
			added = append(added, f)
		}
	}
	return added
}
