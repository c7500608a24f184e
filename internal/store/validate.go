package store

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// crdSchema is one CRD version's schema, ready to default and validate
// with the API server's own code (k8s.io/apiextensions-apiserver).
type crdSchema struct {
	structural *structuralschema.Structural
	validator  apiextensionsvalidation.SchemaValidator
}

func newCRDSchema(v1 *apiextensionsv1.JSONSchemaProps) (*crdSchema, error) {
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1, internal, nil); err != nil {
		return nil, fmt.Errorf("convert schema: %w", err)
	}
	structural, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("schema is not structural: %w", err)
	}
	validator, _, err := apiextensionsvalidation.NewSchemaValidator(internal)
	if err != nil {
		return nil, fmt.Errorf("build schema validator: %w", err)
	}
	return &crdSchema{structural: structural, validator: validator}, nil
}

// admitted is an object that passed validation, in its two canonical
// forms: the typed object and the map the typed object marshals to. Both
// are read-only once admitted.
type admitted struct {
	typed runtime.Object
	obj   map[string]any
}

// admit checks a candidate object (a JSON-like map; defaulted in place)
// the way the API server checks a write with strict field validation:
// type meta, unknown fields (metadata included), schema defaults, the
// OpenAPI schema, list-map keys, and object meta. It answers the object's
// canonical forms or the field errors.
func (s *Store) admit(k *kindInfo, obj map[string]any) (*admitted, field.ErrorList) {
	var errs field.ErrorList
	if v, _ := obj["apiVersion"].(string); v != k.gvk.GroupVersion().String() {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), obj["apiVersion"], "must be "+k.gvk.GroupVersion().String()))
	}
	if v, _ := obj["kind"].(string); v != k.gvk.Kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), obj["kind"], "must be "+k.gvk.Kind))
	}
	if len(errs) > 0 {
		return nil, errs
	}

	if k.schema != nil {
		_, _, unknownMeta, err := objectmeta.GetObjectMetaWithOptions(obj, objectmeta.ObjectMetaOptions{
			ReturnUnknownFieldPaths: true,
			ParentPath:              field.NewPath("metadata"),
		})
		if err != nil {
			return nil, field.ErrorList{field.Invalid(field.NewPath("metadata"), nil, err.Error())}
		}
		// Pruning walks a copy: it reports the fields the schema does
		// not know, which a strict write refuses rather than drops.
		unknown := pruning.PruneWithOptions(runtime.DeepCopyJSON(obj), k.schema.structural, true,
			structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
		for _, p := range append(unknownMeta, unknown...) {
			errs = append(errs, unknownField(strings.TrimPrefix(p, ".")))
		}
		if len(errs) > 0 {
			return nil, sortErrors(errs)
		}
		structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, k.schema.structural)
		structuraldefaulting.Default(obj, k.schema.structural)
		errs = append(errs, apiextensionsvalidation.ValidateCustomResource(nil, obj, k.schema.validator)...)
		errs = append(errs, listtype.ValidateListSetsAndMaps(nil, k.schema.structural, obj)...)
		if len(errs) > 0 {
			return nil, sortErrors(errs)
		}
	}

	typed, err := s.scheme.New(k.gvk)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(nil, fmt.Errorf("scheme cannot make a %s: %w", k.gvk, err))}
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj, typed, true); err != nil {
		return nil, decodeErrors(err)
	}
	m, err := meta.Accessor(typed)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(nil, err)}
	}
	errs = append(errs, apivalidation.ValidateObjectMetaAccessor(m, k.namespaced, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	if len(errs) > 0 {
		return nil, sortErrors(errs)
	}
	canonical, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(nil, err)}
	}
	canonical["apiVersion"], canonical["kind"] = k.gvk.GroupVersion().String(), k.gvk.Kind
	typed.GetObjectKind().SetGroupVersionKind(k.gvk)
	return &admitted{typed: typed, obj: canonical}, nil
}

// validateTransition holds the update rules that compare old and new
// metadata (immutable fields, no new finalizers while deleting).
func validateTransition(oldObj, newObj runtime.Object) field.ErrorList {
	om, err1 := meta.Accessor(oldObj)
	nm, err2 := meta.Accessor(newObj)
	if err1 != nil || err2 != nil {
		return field.ErrorList{field.InternalError(nil, errors.Join(err1, err2))}
	}
	return apivalidation.ValidateObjectMetaAccessorUpdate(nm, om, field.NewPath("metadata"))
}

func unknownField(path string) *field.Error {
	return &field.Error{Type: field.ErrorTypeNotSupported, Field: path, BadValue: "", Detail: "unknown field"}
}

// decodeErrors turns a strict decoding error into field errors, pulling
// the path out of `unknown field "a.b"` messages.
func decodeErrors(err error) field.ErrorList {
	var strict interface{ Errors() []error }
	if errors.As(err, &strict) {
		var errs field.ErrorList
		for _, e := range strict.Errors() {
			msg := e.Error()
			if p, ok := strings.CutPrefix(msg, "unknown field "); ok {
				errs = append(errs, unknownField(strings.Trim(p, `"`)))
				continue
			}
			errs = append(errs, field.Invalid(nil, nil, msg))
		}
		return sortErrors(errs)
	}
	return field.ErrorList{field.Invalid(nil, nil, err.Error())}
}

func sortErrors(errs field.ErrorList) field.ErrorList {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
	return errs
}

// specEqual compares everything but metadata and status: the part whose
// change bumps metadata.generation.
func specEqual(a, b map[string]any) bool {
	strip := func(m map[string]any) map[string]any {
		out := make(map[string]any, len(m))
		for k, v := range m {
			switch k {
			case "metadata", "status", "apiVersion", "kind":
				continue
			}
			out[k] = v
		}
		return out
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// sameIgnoringRV compares two canonical objects but for resourceVersion:
// a write that changes nothing else is a no-op.
func sameIgnoringRV(a, b map[string]any) bool {
	ma, _ := a["metadata"].(map[string]any)
	mb, _ := b["metadata"].(map[string]any)
	if ma == nil || mb == nil {
		return reflect.DeepEqual(a, b)
	}
	ca, cb := shallowWithout(a, "metadata"), shallowWithout(b, "metadata")
	return reflect.DeepEqual(ca, cb) &&
		reflect.DeepEqual(shallowWithout(ma, "resourceVersion"), shallowWithout(mb, "resourceVersion"))
}

func shallowWithout(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// invalidError is the API server's 422 for a write that failed admission.
func invalidError(k *kindInfo, name string, errs field.ErrorList) error {
	return newInvalid(k.groupKind(), name, errs)
}
