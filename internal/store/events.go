package store

import (
	"context"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Events: client-go's own broadcaster (with its aggregation and spam
// filter) records to a sink that writes core/v1 Events into the store.
// Nothing dials an API server. Each namespace keeps at most
// maxEventsPerNS events; the oldest are pruned on every new one.

func (s *Store) startEvents() {
	if s.opts.readOnly {
		return
	}
	s.broadcaster = record.NewBroadcaster()
	s.broadcaster.StartRecordingToSink(&eventSink{s: s})
	s.recorder = s.broadcaster.NewRecorder(s.scheme, corev1.EventSource{Component: "addonwall-store"})
}

// EventRecorder is a recorder that writes Events into the store, under
// component's name. A read-only store has none to write to: its recorder
// drops events.
func (s *Store) EventRecorder(component string) record.EventRecorder {
	if s.broadcaster == nil {
		return &record.FakeRecorder{}
	}
	return s.broadcaster.NewRecorder(s.scheme, corev1.EventSource{Component: component})
}

// eventSink is record.EventSink over the store.
type eventSink struct{ s *Store }

var _ record.EventSink = &eventSink{}

func (es *eventSink) Create(ev *corev1.Event) (*corev1.Event, error) {
	if ev.Namespace == "" {
		ev = ev.DeepCopy()
		ev.Namespace = metav1.NamespaceDefault
	}
	out := ev.DeepCopy()
	if err := es.s.Client().Create(context.Background(), out); err != nil {
		return nil, err
	}
	return out, nil
}

func (es *eventSink) Update(ev *corev1.Event) (*corev1.Event, error) {
	cp := ev.DeepCopy()
	cp.ResourceVersion = ""
	if err := es.s.Client().Update(context.Background(), cp); err != nil {
		return nil, err
	}
	return cp, nil
}

func (es *eventSink) Patch(old *corev1.Event, data []byte) (*corev1.Event, error) {
	cp := old.DeepCopy()
	if err := es.s.Client().Patch(context.Background(), cp, client.RawPatch(types.StrategicMergePatchType, data)); err != nil {
		return nil, err
	}
	return cp, nil
}

// pruneEventsLocked drops the oldest events of namespace ns until at most
// keep are left (callers hold writeMu).
func (s *Store) pruneEventsLocked(ns string, keep int) {
	k := s.kinds[eventGVK]
	entries, _ := s.list(k, selector{namespace: ns})
	over := len(entries) - max(keep, 0)
	if over <= 0 {
		return
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rv < entries[j].rv })
	for _, e := range entries[:over] {
		if e.deleting() {
			continue
		}
		if _, err := s.removeLocked(e, false); err != nil && !apierrors.IsNotFound(err) {
			s.log.Error(err, "cannot prune an old event; the events folder grows", "namespace", ns, "name", e.key.name)
		}
	}
}
