package runner

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/bwrap"
	"github.com/addonwall/addonwall/internal/crowhome"
	"github.com/addonwall/addonwall/internal/dockerwatch"
	"github.com/addonwall/addonwall/internal/egress"
	"github.com/addonwall/addonwall/internal/fixit"
	"github.com/addonwall/addonwall/internal/fswatch"
	"github.com/addonwall/addonwall/internal/hostprobe"
	"github.com/addonwall/addonwall/internal/listener"
	"github.com/addonwall/addonwall/internal/owner"
	"github.com/addonwall/addonwall/internal/session"
)

// environ is the controller's own environment as a map.
func environ() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// controllerPaths are the controller's own folders: never a bind source.
func controllerPaths(o Options) []string {
	return []string{o.Paths.StateDir(), o.Paths.Store, filepath.Dir(o.Paths.ControlSocket())}
}

// crowWatch sends a hint whenever one of the Crow home's files changes.
func crowWatch(mgr manager.Manager, o Options, hints chan<- event.GenericEvent) error {
	w, err := fswatch.New(o.Log.WithName("fswatch"), 30*time.Millisecond)
	if err != nil {
		return err
	}
	w.File(o.Paths.AddonsFile())
	w.File(o.Paths.WallsFile())
	w.Tree(o.Paths.BundlesDir())
	if pf := o.Paths.ProfilesFile(); pf != "" {
		w.File(pf)
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		raw := make(chan struct{}, 1)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-raw:
					select {
					case hints <- event.GenericEvent{Object: &wallsv1.AddonWall{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace}}}:
					default:
					}
				}
			}
		}()
		return w.Run(ctx, raw)
	}))
}

// dockerWatch keeps the docker event watch live and hints the host
// reconciler whenever the watch goes up or down.
//
// A container of an add-on's compose project that starts, stops or dies
// wakes that add-on's AddonWall (the compose project is the add-on's id);
// a hint with no project, sent when the watch comes back, wakes them all.
func dockerWatch(mgr manager.Manager, o Options, eng *dockerwatch.Engine, hostHints, wallHints chan<- event.GenericEvent) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		host := event.GenericEvent{Object: &wallsv1.WallHost{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}}
		wake := func(project string) {
			if crowhome.ValidID(project) != nil {
				return
			}
			select {
			case wallHints <- event.GenericEvent{Object: &wallsv1.AddonWall{ObjectMeta: metav1.ObjectMeta{Name: project, Namespace: o.Namespace}}}:
			default:
			}
		}
		eng.Watch(ctx, o.Log.WithName("docker"), func(project string) {
			if project != "" {
				wake(project)
				return
			}
			if f, err := crowhome.ReadAddons(o.Paths.AddonsFile()); err == nil {
				for id := range f.Entries {
					wake(id)
				}
			}
		}, func(bool) {
			select {
			case hostHints <- host:
			default:
			}
		})
		return nil
	}))
}

func newProber(o Options, eng *dockerwatch.Engine) *hostprobe.Prober {
	return &hostprobe.Prober{Engine: eng, Options: bwrap.ProbeOptions{Path: o.BwrapPath}}
}

// newSessions builds the session manager and its control socket server.
func newSessions(mgr manager.Manager, o Options, prober *hostprobe.Prober, failures *fixit.Records, written *owner.Written, hints chan<- event.GenericEvent) (*session.Manager, error) {
	home := o.Getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	probe := prober.Result(context.Background())
	prep := &session.WallPreparer{
		Paths:           o.Paths,
		Home:            home,
		Environ:         environ(),
		ControllerPaths: controllerPaths(o),
		BwrapPath:       probe.Path,
		SetprivPath:     probe.Setpriv,
		Log:             o.Log.WithName("wall"),
		EgressDeny:      egressDeny(mgr, o.Namespace),
		ListenerFor:     listenerFor(o, prober.Engine),
	}
	if o.WallPreparer != nil {
		o.WallPreparer(prep)
	}
	if o.Paths.Checkout == "" {
		o.Log.Info("no Crow checkout is known (--crow-checkout or CROW_APP_ROOT): no add-on is first-party, and every wall's loopback connections are refused, since the listener-owner check cannot tell Crow's own processes")
	}
	// The store's lock is held, so no other controller runs walls from
	// this Crow home: a relay folder found now is a killed one's.
	if n, err := prep.SweepRelays(); err != nil {
		o.Log.Error(err, "sweeping relay folders left by an earlier controller")
	} else if n > 0 {
		o.Log.Info("removed relay folders left by an earlier controller", "count", n)
	}
	m := &session.Manager{
		Log:       o.Log.WithName("session"),
		Namespace: o.Namespace,
		Hints:     hints,
		Preparer:  prep,
		Owner:     &owner.Choices{WallsFile: o.Paths.WallsFile(), Failures: failures, Written: written, Now: time.Now},
	}
	srv := &session.ControlServer{Path: o.Paths.ControlSocket(), Log: o.Log.WithName("control"), Handler: m.Handle}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if err := srv.Start(ctx); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	})); err != nil {
		return nil, err
	}
	return m, nil
}

// egressDeny reads the operator's egress deny list from this host's
// WallHost, afresh for every spawn. No WallHost means no deny list.
func egressDeny(mgr manager.Manager, host string) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		var h wallsv1.WallHost
		if err := mgr.GetClient().Get(ctx, client.ObjectKey{Name: host}, &h); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("reading WallHost %s: %w", host, err)
		}
		return h.Spec.EgressDenyList, nil
	}
}

// listenerFor makes each relay's listener-owner check: the kernel's
// listening sockets, their processes and, for root-owned sockets, docker.
// A check that cannot be built refuses every loopback connection.
func listenerFor(o Options, eng *dockerwatch.Engine) func(id string) egress.ListenerCheck {
	return func(id string) egress.ListenerCheck {
		installed := map[string]bool{}
		if f, err := crowhome.ReadAddons(o.Paths.AddonsFile()); err == nil {
			for k := range f.Entries {
				installed[k] = true
			}
		}
		cfg := listener.Config{AddonID: id, Installed: installed, Checkout: o.Paths.Checkout, Home: o.Paths.CrowHome}
		if eng != nil {
			cfg.Docker = eng
		}
		c, err := listener.New(cfg)
		if err != nil {
			o.Log.WithName("listener").Info("no listener-owner check for this add-on: every loopback connection is refused", "addon", id, "error", err.Error())
			return func(context.Context, netip.AddrPort, bool) error {
				return fmt.Errorf("no listener-owner check: %w", err)
			}
		}
		return c.Check
	}
}
