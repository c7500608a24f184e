package store

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
)

func TestEventRecorderWritesEventsIntoTheStore(t *testing.T) {
	s := openStore(t, "", WithoutFileWatch(), WithMaxEventsPerNamespace(5))
	c := s.Client()
	ctx := ctxT(t)
	w := testWall("host1", "a")
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	rec := s.EventRecorder("addonwall-test")
	rec.Event(w, corev1.EventTypeNormal, "Walled", "runs inside its wall")
	var evs corev1.EventList
	eventually(t, "the event in the store", func() bool {
		if err := c.List(ctx, &evs, client.InNamespace("host1")); err != nil {
			t.Fatal(err)
		}
		return len(evs.Items) == 1
	})
	e := evs.Items[0]
	if e.Reason != "Walled" || e.InvolvedObject.Name != "a" || e.InvolvedObject.Kind != "AddonWall" ||
		e.InvolvedObject.UID != w.UID || e.Source.Component != "addonwall-test" {
		t.Fatalf("event: %+v", e)
	}

	// The same event again is aggregated into a count, not a new object.
	rec.Event(w, corev1.EventTypeNormal, "Walled", "runs inside its wall")
	eventually(t, "the count to rise", func() bool {
		if err := c.List(ctx, &evs, client.InNamespace("host1")); err != nil {
			t.Fatal(err)
		}
		return len(evs.Items) == 1 && evs.Items[0].Count == 2
	})

	// Events of a cluster-scoped object land in "default".
	h := &wallsv1.WallHost{}
	h.Name = "host1"
	if err := c.Create(ctx, h); err != nil {
		t.Fatal(err)
	}
	rec.Event(h, corev1.EventTypeWarning, "BubblewrapUnusable", "user namespaces are refused")
	eventually(t, "the host's event", func() bool {
		if err := c.List(ctx, &evs, client.InNamespace("default"), client.MatchingFields{"involvedObject.kind": "WallHost"}); err != nil {
			t.Fatal(err)
		}
		return len(evs.Items) == 1
	})

	// Each namespace keeps at most 5; the oldest go first.
	for i := range 12 {
		rec.Event(w, corev1.EventTypeNormal, fmt.Sprintf("Step%d", i), "step")
	}
	eventually(t, "the last event", func() bool {
		if err := c.List(ctx, &evs, client.InNamespace("host1"), client.MatchingFields{"reason": "Step11"}); err != nil {
			t.Fatal(err)
		}
		return len(evs.Items) == 1
	})
	if err := c.List(ctx, &evs, client.InNamespace("host1")); err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != 5 {
		t.Fatalf("%d events kept in host1, want 5", len(evs.Items))
	}
	for _, e := range evs.Items {
		if e.Reason == "Walled" || e.Reason == "Step0" {
			t.Fatalf("an old event survived pruning: %s", e.Reason)
		}
	}
}
