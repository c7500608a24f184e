// Package v1alpha1 holds the walls.addonwall.dev/v1alpha1 API: the AddonWall
// resource (one per add-on) and the WallHost resource (one per host).
//
// +kubebuilder:object:generate=true
// +groupName=walls.addonwall.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "walls.addonwall.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &AddonWall{}, &AddonWallList{}, &WallHost{}, &WallHostList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
