package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/addonwall/addonwall/internal/runner"
)

func init() { extraCommands = append(extraCommands, newRunCmd) }

func newRunCmd(g *globals) *cobra.Command {
	var o runner.Options
	zopts := zap.Options{Development: false}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the controllers on this host's Crow home until stopped",
		Long: `run mirrors the Crow home into AddonWall resources, decides each add-on's wall,
serves connects on the control socket and keeps status up to date. It stops
gracefully on SIGTERM or SIGINT; add-on processes end with it.

Locally it runs on the file store (--store); with --kubeconfig it runs the same
controllers against a Kubernetes API server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			ns, err := g.ns()
			if err != nil {
				return err
			}
			o.Paths, o.Namespace, o.Getenv = p, ns, g.getenv
			o.Log = zap.New(zap.UseFlagOptions(&zopts), zap.WriteTo(g.errw))
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runner.Run(ctx, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "run against this Kubernetes API server instead of the file store")
	f.StringVar(&o.MetricsAddr, "metrics-bind-address", "127.0.0.1:8080", "Prometheus metrics address (loopback only; 0 turns it off)")
	f.StringVar(&o.HealthAddr, "health-probe-bind-address", "127.0.0.1:8081", "health probe address (loopback only; 0 turns it off)")
	gf := goFlagSet()
	zopts.BindFlags(gf)
	f.AddGoFlagSet(gf)
	return cmd
}

// runContext is the context commands run in.
func runContext(cmd *cobra.Command) context.Context {
	if cmd.Context() != nil {
		return cmd.Context()
	}
	return context.Background()
}
