package store

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/addonwall/addonwall/config/crd"
)

// kindInfo is everything the store knows about one kind it serves.
type kindInfo struct {
	gvk        schema.GroupVersionKind
	listGVK    schema.GroupVersionKind
	resource   string // plural, lower case
	namespaced bool
	// hasStatus says status is a subresource: a main write keeps the old
	// status and a status write changes nothing else.
	hasStatus bool
	// schema validates and defaults; nil for built-in kinds, which are
	// checked by their Go types alone.
	schema *crdSchema
	// builtin kinds accept strategic merge patches and updates without a
	// resourceVersion, as the API server does for them.
	builtin bool
	// groupDir is the folder name of the group ("core" for the core group).
	groupDir string
	fieldSet func(obj runtime.Object) fields.Set
}

func (k *kindInfo) groupResource() schema.GroupResource {
	return schema.GroupResource{Group: k.gvk.Group, Resource: k.resource}
}

func (k *kindInfo) groupKind() schema.GroupKind { return k.gvk.GroupKind() }

// dir is the folder of the kind's objects in namespace ns.
func (k *kindInfo) dir(root, ns string) string {
	if !k.namespaced {
		return filepath.Join(root, k.groupDir, k.resource)
	}
	return filepath.Join(root, k.groupDir, k.resource, ns)
}

func (k *kindInfo) path(root string, key objKey) string {
	return filepath.Join(k.dir(root, key.namespace), key.name+objectSuffix)
}

func groupDirName(group string) string {
	if group == "" {
		return "core"
	}
	return group
}

var (
	eventGVK  = corev1.SchemeGroupVersion.WithKind("Event")
	eventZero = &corev1.Event{}
)

// buildKinds decides what the store serves: every kind that the embedded
// CRDs define and the scheme knows, plus core/v1 Event (added to the
// scheme if missing, since the store records its own events).
func buildKinds(scheme *runtime.Scheme) (map[schema.GroupVersionKind]*kindInfo, meta.RESTMapper, error) {
	kinds := map[schema.GroupVersionKind]*kindInfo{}

	crds, err := loadCRDs()
	if err != nil {
		return nil, nil, err
	}
	for _, c := range crds {
		for _, v := range c.Spec.Versions {
			if !v.Served {
				continue
			}
			gvk := schema.GroupVersionKind{Group: c.Spec.Group, Version: v.Name, Kind: c.Spec.Names.Kind}
			if !scheme.Recognizes(gvk) {
				continue
			}
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				return nil, nil, fmt.Errorf("CRD %s version %s has no schema; the store validates every write and cannot serve it", c.Name, v.Name)
			}
			s, err := newCRDSchema(v.Schema.OpenAPIV3Schema)
			if err != nil {
				return nil, nil, fmt.Errorf("CRD %s version %s: %w", c.Name, v.Name, err)
			}
			kinds[gvk] = &kindInfo{
				gvk:        gvk,
				listGVK:    gvk.GroupVersion().WithKind(c.Spec.Names.ListKind),
				resource:   c.Spec.Names.Plural,
				namespaced: c.Spec.Scope == apiextensionsv1.NamespaceScoped,
				hasStatus:  v.Subresources != nil && v.Subresources.Status != nil,
				schema:     s,
				groupDir:   groupDirName(gvk.Group),
				fieldSet:   metaFieldSet,
			}
		}
	}

	if !scheme.Recognizes(eventGVK) {
		if err := corev1.AddToScheme(scheme); err != nil {
			return nil, nil, fmt.Errorf("add core/v1 to the scheme for events: %w", err)
		}
	}
	kinds[eventGVK] = &kindInfo{
		gvk:        eventGVK,
		listGVK:    corev1.SchemeGroupVersion.WithKind("EventList"),
		resource:   "events",
		namespaced: true,
		builtin:    true,
		groupDir:   groupDirName(""),
		fieldSet:   eventFieldSet,
	}

	for gvk, k := range kinds {
		if !scheme.Recognizes(k.listGVK) {
			return nil, nil, fmt.Errorf("the scheme knows %s but not its list kind %s", gvk, k.listGVK.Kind)
		}
	}
	return kinds, restMapperFor(kinds), nil
}

// restMapperFor is the static RESTMapper of the served kinds: no
// discovery, so nothing ever dials an API server to learn it.
func restMapperFor(kinds map[schema.GroupVersionKind]*kindInfo) meta.RESTMapper {
	var gvs []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for gvk := range kinds {
		if gv := gvk.GroupVersion(); !seen[gv] {
			seen[gv] = true
			gvs = append(gvs, gv)
		}
	}
	sort.Slice(gvs, func(i, j int) bool { return gvs[i].String() < gvs[j].String() })
	m := meta.NewDefaultRESTMapper(gvs)
	for gvk, k := range kinds {
		scope := meta.RESTScopeRoot
		if k.namespaced {
			scope = meta.RESTScopeNamespace
		}
		plural := gvk.GroupVersion().WithResource(k.resource)
		singular := gvk.GroupVersion().WithResource(strings.ToLower(gvk.Kind))
		m.AddSpecific(gvk, plural, singular, scope)
	}
	return m
}

func loadCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	names, err := fs.Glob(crd.Bases, "bases/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list embedded CRDs: %w", err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, name := range names {
		data, err := crd.Bases.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read embedded CRD %s: %w", name, err)
		}
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, c); err != nil {
			return nil, fmt.Errorf("decode embedded CRD %s: %w", name, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func metaFieldSet(obj runtime.Object) fields.Set {
	m, err := meta.Accessor(obj)
	if err != nil {
		return fields.Set{}
	}
	return fields.Set{"metadata.name": m.GetName(), "metadata.namespace": m.GetNamespace()}
}

// eventFieldSet holds the field selectors the API server offers for
// events, so that `involvedObject.name=…` works here as it does there.
func eventFieldSet(obj runtime.Object) fields.Set {
	set := metaFieldSet(obj)
	e, ok := obj.(*corev1.Event)
	if !ok {
		return set
	}
	set["involvedObject.kind"] = e.InvolvedObject.Kind
	set["involvedObject.namespace"] = e.InvolvedObject.Namespace
	set["involvedObject.name"] = e.InvolvedObject.Name
	set["involvedObject.uid"] = string(e.InvolvedObject.UID)
	set["involvedObject.apiVersion"] = e.InvolvedObject.APIVersion
	set["involvedObject.resourceVersion"] = e.InvolvedObject.ResourceVersion
	set["involvedObject.fieldPath"] = e.InvolvedObject.FieldPath
	set["reason"] = e.Reason
	set["reportingComponent"] = e.ReportingController
	set["source"] = e.Source.Component
	set["type"] = e.Type
	return set
}
