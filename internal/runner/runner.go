// Package runner builds addonwall's manager — the store or API server it
// runs on, the reconcilers, the session manager and its control socket —
// and runs it until the context ends.
package runner

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/addonwall/addonwall/controllers"
	"github.com/addonwall/addonwall/internal/decide"
	"github.com/addonwall/addonwall/internal/dockerwatch"
	"github.com/addonwall/addonwall/internal/fixit"
	"github.com/addonwall/addonwall/internal/launcher"
	"github.com/addonwall/addonwall/internal/owner"
	"github.com/addonwall/addonwall/internal/paths"
	"github.com/addonwall/addonwall/internal/scheme"
	"github.com/addonwall/addonwall/internal/session"
	"github.com/addonwall/addonwall/internal/store"
)

// Options say what to run.
type Options struct {
	Paths paths.Paths
	// Namespace is this host's namespace (and its WallHost's name).
	Namespace string
	// Kubeconfig, when set, runs against that Kubernetes API server
	// (fleet mode) instead of the file store.
	Kubeconfig string
	// MetricsAddr and HealthAddr are loopback addresses, or "0" for off.
	MetricsAddr, HealthAddr string
	// Getenv reads the controller's own environment (the switches).
	Getenv func(string) string
	Log    logr.Logger
	// BwrapPath probes this bubblewrap instead of looking in the usual places.
	BwrapPath string
	// Ready, when set, is closed once the manager's caches have synced.
	Ready chan<- struct{}
	// WallPreparer, when set, is called with the session manager's
	// preparer before anything runs: to name the entry binary, the
	// listener-owner check, or (tests) the relays' resolver and dialer.
	WallPreparer func(*session.WallPreparer)
}

// CheckLoopback refuses a bind address that is not on loopback: metrics
// and health say which add-ons exist and must not reach the network.
func CheckLoopback(flag, addr string) error {
	if addr == "0" || addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--%s %q is not host:port: %w", flag, addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--%s %q must bind a loopback address (127.0.0.1:PORT or [::1]:PORT), or 0 to turn it off", flag, addr)
	}
	return nil
}

// setLogger hands controller-runtime its process-wide logger once.
var setLogger sync.Once

// Run runs the controllers until ctx ends.
func Run(ctx context.Context, o Options) error {
	setLogger.Do(func() { ctrllog.SetLogger(o.Log) })
	for flag, addr := range map[string]string{"metrics-bind-address": o.MetricsAddr, "health-probe-bind-address": o.HealthAddr} {
		if err := CheckLoopback(flag, addr); err != nil {
			return err
		}
	}
	sch, err := scheme.New()
	if err != nil {
		return err
	}
	mopts := manager.Options{
		Scheme:                  sch,
		Logger:                  o.Log,
		Metrics:                 metricsserver.Options{BindAddress: orOff(o.MetricsAddr)},
		HealthProbeBindAddress:  orOff(o.HealthAddr),
		GracefulShutdownTimeout: durationPtr(10 * time.Second),
		Cache:                   cache.Options{DefaultNamespaces: map[string]cache.Config{o.Namespace: {}}},
		// One manager per process in production; tests and the demo run
		// several in one process, one after another.
		Controller: config.Controller{SkipNameValidation: ptr(true)},
	}
	var cfg *rest.Config
	var recorder func(string) record.EventRecorder
	if o.Kubeconfig != "" {
		if cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig); err != nil {
			return fmt.Errorf("reading the kubeconfig %s: %w", o.Kubeconfig, err)
		}
	} else {
		if err := os.MkdirAll(o.Paths.StateDir(), 0o700); err != nil {
			return fmt.Errorf("making the controller's folder %s: %w", o.Paths.StateDir(), err)
		}
		st, err := store.Open(o.Paths.Store, sch, store.WithLogger(o.Log.WithName("store")))
		if err != nil {
			return fmt.Errorf("opening the store %s: %w", o.Paths.Store, err)
		}
		defer st.Close()
		mopts = st.ManagerOptions(mopts)
		cfg = store.FileStoreConfig()
		recorder = st.EventRecorder
	}
	mgr, err := manager.New(cfg, mopts)
	if err != nil {
		return fmt.Errorf("building the manager: %w", err)
	}
	if recorder == nil {
		//lint:ignore SA1019 the old events API is what the file store records too, so both modes show the same events
		recorder = mgr.GetEventRecorderFor
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}

	sw := decide.ReadSwitches(o.Getenv)
	failures := fixit.New(time.Now)
	wallHints := make(chan event.GenericEvent, 64)
	hostHints := make(chan event.GenericEvent, 4)
	importHints := make(chan event.GenericEvent, 1)

	eng, err := dockerwatch.New()
	if err != nil {
		o.Log.Info("docker is not looked at", "error", err.Error())
		eng = nil
	}
	prober := newProber(o, eng)
	if eng != nil {
		defer eng.Close()
		if err := dockerWatch(mgr, o, eng, hostHints, wallHints); err != nil {
			return err
		}
	}
	if err := (&controllers.WallHostReconciler{
		Client:   mgr.GetClient(),
		Switches: sw,
		Prober:   prober,
		Name:     o.Namespace,
		Hints:    hostHints,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the WallHost controller: %w", err)
	}
	written := &owner.Written{}
	nt := &notices{o: o, sw: sw, c: mgr.GetClient(), written: written, imported: make(chan struct{})}
	if err := mgr.Add(nt.runnable()); err != nil {
		return err
	}
	sessions, err := newSessions(mgr, o, prober, failures, written, wallHints)
	if err != nil {
		return err
	}
	if err := crowWatch(mgr, o, importHints); err != nil {
		return err
	}
	if err := (&controllers.ImporterReconciler{
		Client:      mgr.GetClient(),
		Recorder:    recorder("importer"),
		Paths:       o.Paths,
		Namespace:   o.Namespace,
		TrustedDirs: launcher.TrustedDirs,
		Hints:       importHints,
		Observe:     nt.observe,
		Synced:      nt.synced,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the importer: %w", err)
	}
	if err := (&controllers.AddonWallReconciler{
		Client:   mgr.GetClient(),
		Recorder: recorder("addonwall"),
		Switches: sw,
		Sessions: sessions,
		Failures: failures,
		Hints:    wallHints,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the AddonWall controller: %w", err)
	}
	if o.Ready != nil {
		ready := o.Ready
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			if mgr.GetCache().WaitForCacheSync(ctx) {
				close(ready)
			}
			return nil
		})); err != nil {
			return err
		}
	}
	o.Log.Info("starting", "store", o.Paths.Store, "crowHome", o.Paths.CrowHome, "namespace", o.Namespace,
		"killSwitch", sw.KillSwitch, "hostDefault", string(sw.HostDefault))
	return mgr.Start(ctx)
}

func orOff(addr string) string {
	if addr == "" {
		return "0"
	}
	return addr
}

func durationPtr(d time.Duration) *time.Duration { return &d }

func ptr[T any](v T) *T { return &v }
