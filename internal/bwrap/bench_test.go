package bwrap

import (
	"context"
	"os"
	"testing"
)

// BenchmarkWallStart starts a real wall around /usr/bin/true and waits for
// it: planning excluded, bubblewrap's setup and teardown included.
func BenchmarkWallStart(b *testing.B) {
	r := Probe(context.Background(), ProbeOptions{})
	if !r.Usable {
		if os.Getenv("ADDONWALL_E2E") == "required" {
			b.Fatalf("bubblewrap unusable: %s", r.Message)
		}
		b.Skipf("bubblewrap unusable: %s", r.Message)
	}
	l := newCrow(b)
	p := l.planFor(b, "/usr/bin/true", nil, nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := Start(context.Background(), p, allowAll(), Stdio{}, WithBwrapPath(r.Path))
		if err != nil {
			b.Fatal(err)
		}
		if exit, err := c.Wait(); err != nil || exit.Code != 0 {
			b.Fatal(exit, err)
		}
	}
}
