package store

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
)

const benchObjects = 1000

// benchStore is a store holding benchObjects add-ons.
func benchStore(b *testing.B, opts ...Option) (*Store, []*wallsv1.AddonWall) {
	b.Helper()
	s := openStore(b, "", opts...)
	ctx := ctxT(b)
	walls := make([]*wallsv1.AddonWall, benchObjects)
	for i := range walls {
		w := testWall("host1", fmt.Sprintf("addon-%04d", i))
		if err := s.Client().Create(ctx, w); err != nil {
			b.Fatal(err)
		}
		walls[i] = w
	}
	return s, walls
}

func BenchmarkStoreCreate(b *testing.B) {
	s, _ := benchStore(b, WithoutFileWatch())
	c, ctx := s.Client(), ctxT(b)
	b.ResetTimer()
	for i := range b.N {
		if err := c.Create(ctx, testWall("host1", fmt.Sprintf("new-%d", i))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStoreUpdate(b *testing.B) {
	s, walls := benchStore(b, WithoutFileWatch())
	c, ctx := s.Client(), ctxT(b)
	b.ResetTimer()
	for i := range b.N {
		w := walls[i%len(walls)]
		w.Spec.Launcher.Args = []string{fmt.Sprintf("run-%d", i)}
		if err := c.Update(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStoreStatusUpdate(b *testing.B) {
	s, walls := benchStore(b, WithoutFileWatch())
	c, ctx := s.Client(), ctxT(b)
	b.ResetTimer()
	for i := range b.N {
		w := walls[i%len(walls)]
		w.Status.Reach = fmt.Sprintf("reach %d", i)
		if err := c.Status().Update(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStoreGet(b *testing.B) {
	s, walls := benchStore(b, WithoutFileWatch())
	c, ctx := s.Client(), ctxT(b)
	var got wallsv1.AddonWall
	b.ResetTimer()
	for i := range b.N {
		if err := c.Get(ctx, client.ObjectKeyFromObject(walls[i%len(walls)]), &got); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStoreList(b *testing.B) {
	s, _ := benchStore(b, WithoutFileWatch())
	c, ctx := s.Client(), ctxT(b)
	b.ResetTimer()
	for range b.N {
		var l wallsv1.AddonWallList
		if err := c.List(ctx, &l, client.InNamespace("host1")); err != nil {
			b.Fatal(err)
		}
		if len(l.Items) != benchObjects {
			b.Fatalf("%d items", len(l.Items))
		}
	}
}

func BenchmarkStoreOpen(b *testing.B) {
	s, _ := benchStore(b, WithoutFileWatch())
	dir := s.Dir()
	s.Close()
	b.ResetTimer()
	for range b.N {
		s2, err := Open(dir, newScheme(b), WithoutFileWatch(), WithLogger(logr.Discard()))
		if err != nil {
			b.Fatal(err)
		}
		s2.Close()
	}
}

// BenchmarkStoreHandEditToWatchEvent measures how long a hand edit (an
// in-place rewrite, as editors do) takes to reach a watcher, with 1,000
// objects in the store. Each iteration makes 20 edits; p50 and p95 are
// reported in milliseconds.
func BenchmarkStoreHandEditToWatchEvent(b *testing.B) {
	s, walls := benchStore(b)
	ctx := ctxT(b)
	target := walls[benchObjects/2]
	path, _ := s.PathFor(target, target.Namespace, target.Name)
	wt, err := s.Client().Watch(ctx, &wallsv1.AddonWallList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: target.ResourceVersion}})
	if err != nil {
		b.Fatal(err)
	}
	defer wt.Stop()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N * 20 {
		cmd := fmt.Sprintf("command: node%d", i)
		next := strings.Replace(string(data), "command: node", cmd, 1)
		start := time.Now()
		if err := os.WriteFile(path, []byte(next), 0o600); err != nil {
			b.Fatal(err)
		}
		for {
			select {
			case ev := <-wt.ResultChan():
				if w, ok := ev.Object.(*wallsv1.AddonWall); ok && w.Spec.Launcher.Command == fmt.Sprintf("node%d", i) {
					lat = append(lat, time.Since(start))
					goto next
				}
			case <-time.After(5 * time.Second):
				b.Fatalf("edit %d did not reach the watch", i)
			}
		}
	next:
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
}
