package latency

import (
	"math"
	"slices"
	"testing"
	"time"
)

func ms(ns ...int) Samples {
	s := make(Samples, len(ns))
	for i, n := range ns {
		s[i] = time.Duration(n) * time.Millisecond
	}
	return s
}

func TestPercentile(t *testing.T) {
	oneToTwenty := make([]int, 20)
	for i := range oneToTwenty {
		oneToTwenty[i] = 20 - i // taken in falling order: sorting must happen
	}
	oneToHundred := make([]int, 100)
	for i := range oneToHundred {
		oneToHundred[i] = i + 1
	}
	for _, c := range []struct {
		name string
		s    Samples
		q    float64
		want time.Duration
	}{
		{"no samples", nil, 0.5, 0},
		{"one sample is every percentile", ms(7), 0.95, 7 * time.Millisecond},
		{"median of an odd count", ms(3, 1, 2), 0.5, 2 * time.Millisecond},
		{"median of an even count is the lower middle", ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{"p95 of 20 is the 19th", ms(oneToTwenty...), 0.95, 19 * time.Millisecond},
		{"p50 of 20 is the 10th", ms(oneToTwenty...), 0.5, 10 * time.Millisecond},
		{"p95 of 100 is the 95th", ms(oneToHundred...), 0.95, 95 * time.Millisecond},
		{"q 1 is the largest", ms(5, 9, 1), 1, 9 * time.Millisecond},
		{"q 0 is the smallest", ms(5, 9, 1), 0, 1 * time.Millisecond},
		{"q past 1 is the largest", ms(5, 9, 1), 2, 9 * time.Millisecond},
		{"negative q is the smallest", ms(5, 9, 1), -1, 1 * time.Millisecond},
		{"NaN q is the smallest", ms(5, 9, 1), math.NaN(), 1 * time.Millisecond},
	} {
		if got := c.s.Percentile(c.q); got != c.want {
			t.Errorf("%s: Percentile(%v) = %v, want %v", c.name, c.q, got, c.want)
		}
	}
}

func TestShorthandsAndOrder(t *testing.T) {
	s := ms(50, 10, 40, 20, 30)
	before := slices.Clone(s)
	if got := s.P50(); got != 30*time.Millisecond {
		t.Errorf("P50 = %v, want 30ms", got)
	}
	if got := s.P95(); got != 50*time.Millisecond {
		t.Errorf("P95 = %v, want 50ms", got)
	}
	if !slices.Equal(s, before) {
		t.Errorf("the samples were reordered: %v, were %v", s, before)
	}
	if got := Ms(1500 * time.Microsecond); got != 1.5 {
		t.Errorf("Ms(1.5ms) = %v", got)
	}
	if got := Us(2500 * time.Nanosecond); got != 2.5 {
		t.Errorf("Us(2.5µs) = %v", got)
	}
}
