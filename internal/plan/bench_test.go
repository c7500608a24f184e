package plan

import (
	"fmt"
	"testing"
)

// BenchmarkBuild plans an add-on whose checkout holds 1,000 .env files and
// 1,000 hard-linked files.
func BenchmarkBuild(b *testing.B) {
	in := baseInput()
	s := in.Scans[tCheckout]
	for i := 0; i < 1000; i++ {
		s.Sensitive = append(s.Sensitive, node(fmt.Sprintf("%s/d%d/.env", tCheckout, i), KindFile))
		l := node(fmt.Sprintf("%s/l%d/a", tCheckout, i), KindFile)
		l.Nlink = 2
		l2 := l
		l2.Path = fmt.Sprintf("%s/l%d/b", tCheckout, i)
		s.Links = append(s.Links, l, l2)
	}
	in.Scans[tCheckout] = s
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Build(in); err != nil {
			b.Fatal(err)
		}
	}
}
