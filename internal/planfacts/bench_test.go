package planfacts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkScan scans a tree of 20,000 files in 200 folders, a few of them
// .env files and hard links.
func BenchmarkScan(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for d := 0; d < 200; d++ {
		dir := fmt.Sprintf("%s/d%d", root, d)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := 0; f < 100; f++ {
			if err := os.WriteFile(fmt.Sprintf("%s/f%d.js", dir, f), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(dir+"/.env", []byte("A=1"), 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Link(dir+"/f0.js", dir+"/alias.js"); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s, err := Scan(context.Background(), root, DefaultLimits)
		if err != nil || s.Incomplete != "" {
			b.Fatal(err, s.Incomplete)
		}
	}
}
