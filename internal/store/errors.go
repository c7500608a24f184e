package store

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The store answers with the API server's own error values, so that
// apierrors.IsConflict, IsNotFound, IsInvalid … work unchanged.

func newInvalid(gk schema.GroupKind, name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(gk, name, errs)
}

func notFound(k *kindInfo, name string) error {
	return apierrors.NewNotFound(k.groupResource(), name)
}

func staleConflict(k *kindInfo, name string) error {
	return apierrors.NewConflict(k.groupResource(), name,
		fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}

func handEditConflict(k *kindInfo, name, path string) error {
	return apierrors.NewConflict(k.groupResource(), name,
		fmt.Errorf("%s was changed by hand since the store last read it; the store picks the edit up in a moment, then retry", path))
}

func badFileConflict(k *kindInfo, name string, p Problem) error {
	return apierrors.NewConflict(k.groupResource(), name,
		fmt.Errorf("%s holds a hand edit that is not valid (%s); the store keeps serving the last good version and will not overwrite the file until it is fixed or removed", p.File, p.describe()))
}

func badRequest(format string, args ...any) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

func unsupportedMediaType(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: msg,
	}}
}

func methodNotSupported(k *kindInfo, action string) error {
	return apierrors.NewMethodNotSupported(k.groupResource(), action)
}

func expired(rv uint64, floor uint64) error {
	return apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, floor))
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
