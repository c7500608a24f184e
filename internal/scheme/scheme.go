// Package scheme is the one runtime.Scheme addonwall stores and reads: the
// core kinds (for events) and the walls kinds.
package scheme

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
)

// New returns a scheme with the kinds addonwall stores.
func New() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("registering the core kinds: %w", err)
	}
	if err := wallsv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("registering the walls kinds: %w", err)
	}
	return s, nil
}
