// Package latency summarises the durations a benchmark timed as
// percentiles, so every benchmark reads p50 and p95 the same way.
package latency

import (
	"math"
	"slices"
	"time"
)

// Samples are timed durations, in the order they were taken. Append to it
// as to any slice.
type Samples []time.Duration

// Percentile returns the nearest-rank q-quantile (q in (0, 1]): the
// smallest sample that at least q of the samples do not exceed. q at or
// below 0 gives the smallest sample, above 1 the largest; no samples give
// 0. The samples are not reordered.
func (s Samples) Percentile(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	rank := int(math.Ceil(q * float64(len(sorted))))
	if math.IsNaN(q) {
		rank = 1
	}
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// P50 is the median.
func (s Samples) P50() time.Duration { return s.Percentile(0.50) }

// P95 is the 95th percentile.
func (s Samples) P95() time.Duration { return s.Percentile(0.95) }

// Ms is d in milliseconds, with the fraction, for b.ReportMetric.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Us is d in microseconds, with the fraction, for b.ReportMetric.
func Us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
