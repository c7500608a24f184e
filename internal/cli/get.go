package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/decide"
)

// Output formats of get.
const (
	outTable = ""
	outWide  = "wide"
	outYAML  = "yaml"
	outJSON  = "json"
)

func newGetCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "get addonwalls|wallhost [ID]",
		Short: "List add-on walls or this host's wall facts",
		Long: `get reads the store directly, whether or not the controller runs.

  addonwall get addonwalls            one line per add-on: ID, MODE, WORD, READY, AGE
  addonwall get addonwalls kb -o yaml one add-on in full
  addonwall get wallhost -o wide      the switches, bubblewrap and docker as found`,
		Args:      cobra.RangeArgs(1, 2),
		ValidArgs: []string{"addonwalls", "addonwall", "aw", "wallhost", "wallhosts", "wh"},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch output {
			case outTable, outWide, outYAML, outJSON:
			default:
				return fmt.Errorf("unknown output format %q: use wide, yaml or json", output)
			}
			lang, err := decide.ParseLang(g.lang)
			if err != nil {
				return err
			}
			r, err := openReader(g)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var name string
			if len(args) == 2 {
				name = args[1]
			}
			switch args[0] {
			case "addonwalls", "addonwall", "aw", "walls":
				items, err := listWalls(ctx, g, r, name)
				if err != nil {
					return err
				}
				return printWalls(g.out, items, output, lang)
			case "wallhost", "wallhosts", "wh":
				items, err := listHosts(ctx, g, r, name)
				if err != nil {
					return err
				}
				return printHosts(g.out, items, output)
			default:
				return fmt.Errorf("unknown resource %q: use addonwalls or wallhost", args[0])
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: wide, yaml or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{outWide, outYAML, outJSON}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func listWalls(ctx context.Context, g *globals, r client.Reader, name string) ([]wallsv1.AddonWall, error) {
	ns, err := g.ns()
	if err != nil {
		return nil, err
	}
	if name != "" {
		var w wallsv1.AddonWall
		if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &w); err != nil {
			return nil, fmt.Errorf("reading add-on %q in namespace %q: %w", name, ns, err)
		}
		return []wallsv1.AddonWall{w}, nil
	}
	var l wallsv1.AddonWallList
	if err := r.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing add-ons in namespace %q: %w", ns, err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items, nil
}

func listHosts(ctx context.Context, g *globals, r client.Reader, name string) ([]wallsv1.WallHost, error) {
	if name == "" {
		ns, err := g.ns()
		if err != nil {
			return nil, err
		}
		name = ns
	}
	var h wallsv1.WallHost
	if err := r.Get(ctx, client.ObjectKey{Name: name}, &h); err != nil {
		return nil, fmt.Errorf("reading wall host %q: %w", name, err)
	}
	return []wallsv1.WallHost{h}, nil
}

func printWalls(w io.Writer, items []wallsv1.AddonWall, output string, lang decide.Lang) error {
	objs := make([]runtime.Object, len(items))
	for i := range items {
		items[i].APIVersion, items[i].Kind = wallsv1.GroupVersion.String(), "AddonWall"
		objs[i] = &items[i]
	}
	return printObjects(w, output, objs, "ID\tMODE\tWORD\tREADY\tAGE", "TIER\tSESSIONS\tREACH", func(i int, wide bool) []string {
		a := &items[i]
		row := []string{a.Name, orDash(string(a.Status.Mode)), orDash(wordFor(a.Status.Reason, a.Status.Word, lang)),
			conditionStatus(a.Status.Conditions, wallsv1.ReadyCondition), age(a.CreationTimestamp)}
		if wide {
			row = append(row, orDash(string(a.Status.Tier)), fmt.Sprint(a.Status.Sessions.Active), orDash(a.Status.Reach))
		}
		return row
	})
}

func printHosts(w io.Writer, items []wallsv1.WallHost, output string) error {
	objs := make([]runtime.Object, len(items))
	for i := range items {
		items[i].APIVersion, items[i].Kind = wallsv1.GroupVersion.String(), "WallHost"
		objs[i] = &items[i]
	}
	return printObjects(w, output, objs, "NAME\tWALLS\tBWRAP\tDOCKER\tAGE", "BWRAP-VERSION\tSECCOMP\tSETPRIV\tWHY", func(i int, wide bool) []string {
		h := &items[i]
		row := []string{h.Name, orDash(h.Status.Switches.Effective),
			conditionStatus(h.Status.Conditions, wallsv1.BubblewrapUsableCondition),
			conditionStatus(h.Status.Conditions, wallsv1.DockerWatchedCondition), age(h.CreationTimestamp)}
		if wide {
			row = append(row, orDash(h.Status.Bubblewrap.Version), fmt.Sprint(h.Status.Seccomp.HasTable),
				fmt.Sprint(h.Status.Setpriv.Available), orDash(h.Status.Bubblewrap.Message))
		}
		return row
	})
}

// printObjects prints objs as a kubectl List (json, yaml) or as a table:
// header's columns, wideHeader's after them with -o wide, and row(i,
// wide) for objs[i].
func printObjects(w io.Writer, output string, objs []runtime.Object, header, wideHeader string, row func(i int, wide bool) []string) error {
	switch output {
	case outJSON, outYAML:
		return printList(w, objs, output)
	}
	wide := output == outWide
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	if wide {
		header += "\t" + wideHeader
	}
	fmt.Fprintln(tw, header)
	for i := range objs {
		fmt.Fprintln(tw, strings.Join(row(i, wide), "\t"))
	}
	return tw.Flush()
}

// printList prints objects as a kubectl-style List.
func printList(w io.Writer, objs []runtime.Object, output string) error {
	list := struct {
		APIVersion string           `json:"apiVersion"`
		Kind       string           `json:"kind"`
		Items      []runtime.Object `json:"items"`
		Metadata   metav1.ListMeta  `json:"metadata"`
	}{APIVersion: "v1", Kind: "List", Items: objs}
	if list.Items == nil {
		list.Items = []runtime.Object{}
	}
	b, err := json.MarshalIndent(list, "", "    ")
	if err != nil {
		return fmt.Errorf("encoding the list: %w", err)
	}
	if output == outYAML {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return fmt.Errorf("encoding the list as YAML: %w", err)
		}
	} else {
		b = append(b, '\n')
	}
	_, err = w.Write(b)
	return err
}

// wordFor is the status word in the asked language. The stored English
// word is used only for a reason this build does not know.
func wordFor(reason, stored string, lang decide.Lang) string {
	if reason == "" {
		return stored
	}
	if w := decide.Word(reason, lang); w != "" {
		return w
	}
	return stored
}

func conditionStatus(conds []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return string(c.Status)
	}
	return "Unknown"
}

func age(t metav1.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// eventsFor lists the recent events about one object, newest first.
func eventsFor(ctx context.Context, r client.Reader, ns, kind, name string, max int) ([]corev1.Event, error) {
	var l corev1.EventList
	if err := r.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing events in namespace %q: %w", ns, err)
	}
	var out []corev1.Event
	for _, e := range l.Items {
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return eventTime(out[i]).After(eventTime(out[j])) })
	if len(out) > max {
		out = out[:max]
	}
	return out, nil
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.CreationTimestamp.Time
	}
}
