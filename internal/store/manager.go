package store

import (
	"errors"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// FileStoreConfig is the rest.Config to hand manager.New in file mode.
// manager.New needs one; with ManagerOptions the store's client and
// cache never use it. Its transport refuses every request, so a part of
// controller-runtime that would still reach for an API server
// (GetAPIReader, the manager's own event recorders) fails at once with
// ErrNoAPIServer instead of dialing (or even resolving the .invalid
// host). Use Store.EventRecorder for events.
func FileStoreConfig() *rest.Config {
	return &rest.Config{Host: "https://file-store.invalid", Transport: refuseTransport{}}
}

// ManagerOptions returns o set up to run controller-runtime on the store
// with no API server: the store's client, cache and static RESTMapper;
// the store's scheme when o has none; metrics and health probes off
// unless o names addresses; leader election off (one controller per
// store: Open's lock already ensures it). Pair it with FileStoreConfig.
func (s *Store) ManagerOptions(o manager.Options) manager.Options {
	if o.Scheme == nil {
		o.Scheme = s.scheme
	}
	o.NewClient = s.NewClient
	o.NewCache = s.NewCache
	o.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) { return s.mapper, nil }
	o.LeaderElection = false
	if o.Metrics.BindAddress == "" {
		o.Metrics.BindAddress = "0"
	}
	if o.HealthProbeBindAddress == "" {
		o.HealthProbeBindAddress = "0"
	}
	return o
}

// ErrNoAPIServer is what any HTTP request made with FileStoreConfig gets: in file mode there is no API server to ask.
var ErrNoAPIServer = errors.New("file store mode: there is no API server; this request would have needed one")

type refuseTransport struct{}

func (refuseTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, fmt.Errorf("%s %s: %w", r.Method, r.URL.Path, ErrNoAPIServer)
}
