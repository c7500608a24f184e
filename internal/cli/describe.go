package cli

import (
	"fmt"
	"html"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/decide"
)

func newDescribeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:       "describe addonwall ID",
		Short:     "Show one add-on's wall: conditions, reach, Fix-it card and recent events",
		Args:      cobra.ExactArgs(2),
		ValidArgs: []string{"addonwall"},
		RunE: func(cmd *cobra.Command, args []string) error {
			if k := args[0]; k != "addonwall" && k != "addonwalls" && k != "aw" {
				return fmt.Errorf("unknown resource %q: describe takes addonwall ID", k)
			}
			lang, err := decide.ParseLang(g.lang)
			if err != nil {
				return err
			}
			r, err := openReader(g)
			if err != nil {
				return err
			}
			items, err := listWalls(cmd.Context(), g, r, args[1])
			if err != nil {
				return err
			}
			a := items[0]
			evs, err := eventsFor(cmd.Context(), r, a.Namespace, "AddonWall", a.Name, 10)
			if err != nil {
				return err
			}
			return describeWall(g.out, &a, evs, lang)
		},
	}
}

func describeWall(w io.Writer, a *wallsv1.AddonWall, evs []corev1.Event, lang decide.Lang) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, orDash(v)) }
	s := a.Status
	p("ID", a.Name)
	p("Namespace", a.Namespace)
	p("Mode", string(s.Mode))
	p("Word", wordFor(s.Reason, s.Word, lang))
	p("Reason", s.Reason)
	p("Tier", string(s.Tier))
	p("Reach", s.Reach)
	p("Install folder", a.Spec.InstallDir)
	p("Command", strings.TrimSpace(a.Spec.Launcher.Command+" "+strings.Join(a.Spec.Launcher.Args, " ")))
	p("Owner's choice", string(a.Spec.OwnerChoice))
	p("Plan", s.PlanHash)
	p("Generation", fmt.Sprintf("%d (observed %d)", a.Generation, s.ObservedGeneration))
	sess := fmt.Sprintf("%d active", s.Sessions.Active)
	if s.Sessions.LastExit != nil {
		sess += fmt.Sprintf("; last ended %s ago: %s", age(*s.Sessions.LastExit), orDash(s.Sessions.LastExitReason))
	}
	p("Sessions", sess)
	if err := tw.Flush(); err != nil {
		return err
	}
	if f := s.Failure; f != nil {
		fmt.Fprintf(w, "\nFix-it card (ref %s, since %s ago):\n  %s\n  %s\n", f.Ref, age(f.Since), decide.Word(f.Reason, lang), shown(f.Message))
		fmt.Fprintf(w, "  Run without the wall:  addonwall unwall --ref %s\n", f.Ref)
	}
	if p := a.Spec.InputProblem; p != nil {
		fmt.Fprintf(w, "\nInput problem:\n  %s: %s: %s\n", p.File, orDash(p.Key), p.Message)
	}
	if len(s.Egress.Refusals) > 0 || len(s.Egress.Dropped) > 0 {
		fmt.Fprintln(w, "\nNetwork refusals:")
		keys := make([]string, 0, len(s.Egress.Refusals))
		for k := range s.Egress.Refusals {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "  %s: %d\n", k, s.Egress.Refusals[k])
		}
		for _, l := range s.Egress.Latest {
			fmt.Fprintf(w, "  latest: %s\n", l)
		}
		for _, d := range s.Egress.Dropped {
			fmt.Fprintf(w, "  dropped: %s\n", d)
		}
	}
	fmt.Fprintln(w, "\nConditions:")
	ctw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(ctw, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
	for _, c := range s.Conditions {
		fmt.Fprintf(ctw, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, age(c.LastTransitionTime), shown(c.Message))
	}
	if err := ctw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nEvents:")
	if len(evs) == 0 {
		fmt.Fprintln(w, "  <none>")
		return nil
	}
	etw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(etw, "  TYPE\tREASON\tAGE\tMESSAGE")
	for _, e := range evs {
		t := e.LastTimestamp
		if t.IsZero() {
			t = e.CreationTimestamp
		}
		fmt.Fprintf(etw, "  %s\t%s\t%s\t%s\n", e.Type, e.Reason, age(t), shown(e.Message))
	}
	return etw.Flush()
}

// shown makes a status message fit for a terminal. Messages hold outside
// text made inert for every surface (control characters as visible
// escapes, HTML specials as entities); a terminal shows the characters
// themselves. A control or format character that still reaches here (a
// hand-edited store file) is shown as U+FFFD, never sent to the terminal.
func shown(msg string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return utf8.RuneError
		}
		return r
	}, html.UnescapeString(msg))
}
