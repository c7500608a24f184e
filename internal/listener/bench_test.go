package listener

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

// BenchmarkListenerCheck times one full check of an allowed same-user
// service, with 0, 1,000 and 2,000 extra processes of that same user on
// the machine (the worst case: each one's descriptors are read), each
// uncached (TTL disabled) and cached (only the listening sockets are read
// afresh), and once more with 2,000 processes of another user (one stat
// each). The extra processes are real. p50 and p99 are reported per
// check, with the count of processes on the machine while it ran.
func BenchmarkListenerCheck(b *testing.B) {
	needRoot(b)
	c := newCrow(b)
	svc := start(b, "127.0.0.1:0", svcOpts{uid: nobody, dir: openDir(b, "svc")})
	uncached := c.checker(b, nil)
	cached := c.checker(b, func(cfg *Config) { cfg.TTL = time.Hour })

	var extra []*exec.Cmd
	stop := func() {
		for _, p := range extra {
			_ = p.Process.Kill()
		}
		for _, p := range extra {
			_ = p.Wait()
		}
		extra = extra[:0]
	}
	b.Cleanup(stop)
	spawn := func(n int, uid uint32) {
		for range n {
			cmd := exec.Command("sleep", "3600")
			cmd.Env = []string{}
			cmd.SysProcAttr = &syscall.SysProcAttr{
				Credential: &syscall.Credential{Uid: uid, Gid: uid},
				Pdeathsig:  syscall.SIGKILL,
			}
			if err := cmd.Start(); err != nil {
				b.Fatalf("starting extra process %d: %v", len(extra), err)
			}
			extra = append(extra, cmd)
		}
	}
	for _, n := range []int{0, 1000, 2000} {
		spawn(n-len(extra), nobody)
		b.Run(fmt.Sprintf("extra=%d", n), func(b *testing.B) { timeChecks(b, uncached, svc) })
		b.Run(fmt.Sprintf("extra=%d/cached", n), func(b *testing.B) { timeChecks(b, cached, svc) })
	}
	stop()
	spawn(2000, 4242)
	b.Run("extra=2000-other-user", func(b *testing.B) { timeChecks(b, uncached, svc) })
}

func timeChecks(b *testing.B, ch *Checker, svc *service) {
	ctx := context.Background()
	var d []time.Duration
	for b.Loop() {
		t0 := time.Now()
		err := ch.Check(ctx, svc.Addr, true)
		d = append(d, time.Since(t0))
		if err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(procCount()), "procs")
}

func procCount() int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if c := e.Name()[0]; c >= '1' && c <= '9' {
			n++
		}
	}
	return n
}
