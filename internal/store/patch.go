package store

import (
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// applyPatch applies a patch to an object's JSON, as the API server does
// for each patch type. Strategic merge patches need the Go type's patch
// metadata, so they are refused for custom resources (415), as there.
func (s *Store) applyPatch(k *kindInfo, cur []byte, pt types.PatchType, data []byte) ([]byte, error) {
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(data)
		if err != nil {
			return nil, badRequest("invalid JSON patch: %v", err)
		}
		out, err := p.Apply(cur)
		if err != nil {
			return nil, invalidPatch(k, err)
		}
		return out, nil
	case types.MergePatchType:
		out, err := jsonpatch.MergePatch(cur, data)
		if err != nil {
			return nil, badRequest("invalid merge patch: %v", err)
		}
		return out, nil
	case types.StrategicMergePatchType:
		if !k.builtin {
			return nil, unsupportedMediaType(fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json (strategic merge patch is not supported for %s, a custom resource)", k.gvk.Kind))
		}
		typed, err := s.scheme.New(k.gvk)
		if err != nil {
			return nil, err
		}
		out, err := strategicpatch.StrategicMergePatch(cur, data, typed)
		if err != nil {
			return nil, badRequest("invalid strategic merge patch: %v", err)
		}
		return out, nil
	case types.ApplyYAMLPatchType, types.ApplyCBORPatchType:
		return nil, methodNotSupported(k, "apply (server-side apply is not supported by the file store; use Update or a merge patch)")
	}
	return nil, unsupportedMediaType(fmt.Sprintf("patch type %q is not supported", pt))
}

func invalidPatch(k *kindInfo, err error) error {
	return badRequest("the JSON patch does not apply to this %s: %v", k.gvk.Kind, err)
}

// patch applies a patch to the current object and stores the result as
// an update of the given scope. A resourceVersion in the patched object
// (client.MergeFromWithOptimisticLock puts one there) must be current.
func (s *Store) patch(k *kindInfo, key objKey, pt types.PatchType, data []byte, scope writeScope, o writeOpts) (*entry, error) {
	if s.opts.readOnly {
		return nil, errReadOnly
	}
	if scope == scopeStatus && !k.hasStatus {
		return nil, notFound(k, key.name+"/status")
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	old, err := s.writable(k, key)
	if err != nil {
		return nil, err
	}
	cur, err := json.Marshal(old.obj)
	if err != nil {
		return nil, err
	}
	patched, err := s.applyPatch(k, cur, pt, data)
	if err != nil {
		return nil, err
	}
	var in map[string]any
	if err := utiljson.Unmarshal(patched, &in); err != nil {
		return nil, badRequest("the patched %s is not a JSON object: %v", k.gvk.Kind, err)
	}
	if in == nil {
		return nil, badRequest("the patched %s is empty", k.gvk.Kind)
	}
	if rv := metaString(in, "resourceVersion"); rv != "" && rv != formatRV(old.rv) {
		return nil, staleConflict(k, key.name)
	}
	if err := checkUID(old, in); err != nil {
		return nil, err
	}
	return s.replace(old, prepareUpdate(k, old.obj, in, scope == scopeStatus), scope, o, nil)
}
