package session

import (
	"context"
	"math"
	"os"
	"testing"
	"time"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
)

// The CPU limit is judged on an average over 30 s: an end-to-end test of it
// would burn a core for half a minute on a shared machine, so the
// arithmetic is tested here, on sample sequences as watchLimits builds them
// (one sample a second). Memory and disk are tested end to end
// (test/e2e/wall_limits_test.go).

// feed runs seconds of samples at rate cores through addSample, and
// returns the verdict after each one.
func feed(start time.Time, samples []cpuSample, from uint64, seconds int, rate float64) ([]cpuSample, uint64, []bool, float64) {
	ticks := from
	var verdicts []bool
	var used float64
	for i := 0; i < seconds; i++ {
		ticks += uint64(rate * clockTicks)
		at := start.Add(time.Duration(len(verdicts)+1) * time.Second)
		if n := len(samples); n > 0 {
			at = samples[n-1].at.Add(time.Second)
		}
		samples = addSample(samples, cpuSample{at: at, ticks: ticks})
		u, over := cpuOver(samples, 1)
		verdicts = append(verdicts, over)
		used = u
	}
	return samples, ticks, verdicts, used
}

func firstOver(v []bool) int {
	for i, o := range v {
		if o {
			return i + 1
		}
	}
	return -1
}

func TestCPULimitArithmetic(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	cases := []struct {
		name    string
		rate    float64
		seconds int
		// wantOver is the second the verdict first says over (-1: never):
		// once the samples span the window less one sampling step.
		wantOver int
		wantUsed float64
	}{
		{name: "two cores against one", rate: 2, seconds: 40, wantOver: 29, wantUsed: 2},
		{name: "just over", rate: 1.1, seconds: 40, wantOver: 29, wantUsed: 1.1},
		// Positive control for the refusals above: the same arithmetic lets
		// a wall at or under its limit run.
		{name: "at the limit", rate: 1, seconds: 60, wantOver: -1, wantUsed: 1},
		{name: "half a core", rate: 0.5, seconds: 60, wantOver: -1, wantUsed: 0.5},
		// A burst shorter than the window is not judged on its own.
		{name: "a start-up burst", rate: 4, seconds: 28, wantOver: -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			samples := []cpuSample{{at: t0, ticks: 1000}}
			_, _, v, used := feed(t0, samples, 1000, c.seconds, c.rate)
			if got := firstOver(v); got != c.wantOver {
				t.Errorf("first over at second %d, want %d", got, c.wantOver)
			}
			if c.wantUsed != 0 && math.Abs(used-c.wantUsed) > 0.01 {
				t.Errorf("used %.3f cores, want %.2f", used, c.wantUsed)
			}
		})
	}
}

// A sum that goes down (a busy process's time left it) restarts the window:
// it is neither a negative use nor, as an unsigned subtraction would make
// it, an enormous one that stops a wall that is idle.
func TestCPUSumThatDropsRestartsTheWindow(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	samples := []cpuSample{{at: t0, ticks: 50_000}}
	samples, _, v, _ := feed(t0, samples, 50_000, 20, 0.2)
	if firstOver(v) != -1 {
		t.Fatal("an idle wall was over before the drop")
	}
	// The drop: 40 000 ticks leave the sum.
	samples, _, v, _ = feed(t0, samples, 10_000, 40, 0.2)
	if got := firstOver(v); got != -1 {
		t.Errorf("after a drop in the sum, an idle wall was judged over at second %d", got)
	}
	if first := samples[0].ticks; first < 10_000 {
		t.Errorf("the window still reaches before the drop (first sample %d ticks)", first)
	}
	// And the window works again after the drop: a busy wall is caught.
	_, _, v, _ = feed(t0, samples, samples[len(samples)-1].ticks, 40, 3)
	if firstOver(v) == -1 {
		t.Error("after the drop a wall using 3 cores was never judged over")
	}
}

func TestCPUNotWatched(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	samples := []cpuSample{{at: t0, ticks: 0}, {at: t0.Add(30 * time.Second), ticks: 100 * 30 * 8}}
	if _, over := cpuOver(samples, 0); over {
		t.Error("a zero CPU limit is no limit")
	}
	if _, over := cpuOver(samples, 16); over {
		t.Error("8 cores judged over a 16-core limit")
	}
	if _, over := cpuOver(samples, 4); !over {
		t.Error("8 cores not judged over a 4-core limit")
	}
}

func TestLimitWords(t *testing.T) {
	for b, want := range map[int64]string{
		64 << 20:          "64 MiB",
		600 << 20:         "600 MiB",
		512<<20 + 1:       "512 MiB",
		1 << 30:           "1 GiB",
		3 << 29:           "1.5 GiB",
		12<<30 + 12345678: "12 GiB",
	} {
		if got := size(b); got != want {
			t.Errorf("size(%d) = %q, want %q", b, got, want)
		}
	}
	// An amount over a limit never reads as the limit.
	for b, want := range map[int64]string{
		64<<20 + 1:  "65 MiB",
		64 << 20:    "64 MiB",
		1<<30 + 1:   "1025 MiB",
		10 << 30:    "10.0 GiB",
		10<<30 + 1:  "10.1 GiB",
		600<<20 - 5: "600 MiB",
	} {
		if got := usage(b); got != want {
			t.Errorf("usage(%d) = %q, want %q", b, got, want)
		}
	}
	for c, want := range map[float64]string{1: "1 core", 0.5: "0.5 cores", 2: "2 cores"} {
		if got := cores(c); got != want {
			t.Errorf("cores(%v) = %q, want %q", c, got, want)
		}
	}
}

// A wall whose limits cannot be watched (its process cannot be read) is
// ended rather than left to run unwatched; ending the session first
// reports nothing.
func TestLimitsThatCannotBeWatchedEndTheWall(t *testing.T) {
	l := Limits{Memory: 64 << 20}
	const gone = 0x3ffffffe // above pid_max: no such process
	e, bad := watchLimits(context.Background(), gone, l)
	if !bad || e.reason != wallsv1.ReasonWallNotVerified {
		t.Fatalf("unwatchable limits: %+v %v, want the wall ended", e, bad)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if e, bad := watchLimits(ctx, gone, l); bad {
		t.Fatalf("a session already over reported %+v", e)
	}
	// Positive control: a live process is watched, and with nothing over
	// its limit nothing is reported before the session ends.
	ctx, cancel = context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if e, bad := watchLimits(ctx, os.Getpid(), Limits{Memory: 1 << 40}); bad {
		t.Fatalf("a live process under its limit reported %+v", e)
	}
}
