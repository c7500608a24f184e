package session

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
)

// Limits are watched from outside the wall (a wall cannot make cgroups).
// A zero field is not watched.
type Limits struct {
	// Memory is the most resident memory, in bytes, of all the wall's processes.
	Memory int64
	// CPU is the most cores the wall may use, averaged over CPUWindow.
	CPU float64
	// Disk is the most bytes the data folder may hold.
	Disk int64
	// DataDir is the folder Disk is about.
	DataDir string
}

// Watch intervals. CPU is averaged over 30 s, as the forge cells do.
const (
	sampleEvery = time.Second
	diskEvery   = 10 * time.Second
	cpuWindow   = 30 * time.Second
	// diskWalkMax bounds one walk of the data folder.
	diskWalkMax = 200000
)

// clockTicks is USER_HZ, which Linux fixes at 100 for /proc.
const clockTicks = 100

type cpuSample struct {
	at    time.Time
	ticks uint64
}

// watchLimits samples the wall whose init is pid until ctx ends, and
// reports the first limit it finds exceeded.
func watchLimits(ctx context.Context, pid int, l Limits) (ending, bool) {
	if l.Memory <= 0 && l.CPU <= 0 && (l.Disk <= 0 || l.DataDir == "") {
		return ending{}, false
	}
	// A wall whose limits cannot be watched is not left to run unwatched:
	// the namespace is asked for until attestation would have given up,
	// and then the wall is ended. A child that is simply gone ends its
	// session first (ctx), and then nothing is reported.
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	for deadline := time.Now().Add(attestWait); err != nil; {
		if time.Now().After(deadline) {
			return ending{reason: wallsv1.ReasonWallNotVerified, message: fmt.Sprintf("its limits cannot be watched: %v", err)}, true
		}
		select {
		case <-ctx.Done():
			return ending{}, false
		case <-time.After(50 * time.Millisecond):
		}
		ns, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	}
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	var samples []cpuSample
	var lastDisk time.Time
	for {
		select {
		case <-ctx.Done():
			return ending{}, false
		case now := <-tick.C:
			rss, ticks := sampleNamespace(ns)
			if l.Memory > 0 && rss > l.Memory {
				return ending{reason: wallsv1.ReasonOverLimit, message: fmt.Sprintf("it used %s of memory, over its %s limit", usage(rss), size(l.Memory))}, true
			}
			samples = addSample(samples, cpuSample{now, ticks})
			if used, over := cpuOver(samples, l.CPU); over {
				return ending{reason: wallsv1.ReasonOverLimit, message: fmt.Sprintf("it used %.1f cores over 30 s, over its %s limit", used, cores(l.CPU))}, true
			}
			if l.Disk > 0 && l.DataDir != "" && now.Sub(lastDisk) >= diskEvery {
				lastDisk = now
				if used := diskUsage(l.DataDir); used > l.Disk {
					return ending{reason: wallsv1.ReasonOverLimit, message: fmt.Sprintf("its data folder holds %s, over its %s limit", usage(used), size(l.Disk))}, true
				}
			}
		}
	}
}

// addSample appends s and drops the samples older than the window. A total
// that went down (a process's time left the sum: one reaped by nobody, or
// gone between two reads) says nothing about the window, so the window
// starts again from s rather than subtract across the drop.
func addSample(samples []cpuSample, s cpuSample) []cpuSample {
	if n := len(samples); n > 0 && s.ticks < samples[n-1].ticks {
		samples = samples[:0]
	}
	samples = append(samples, s)
	for len(samples) > 1 && s.at.Sub(samples[0].at) > cpuWindow {
		samples = samples[1:]
	}
	return samples
}

// cpuOver averages the cores used from the oldest sample to the newest and
// says whether that is over limit. It judges only a full window (less one
// sampling step), so a burst at start is not judged on its own.
func cpuOver(samples []cpuSample, limit float64) (used float64, over bool) {
	if limit <= 0 || len(samples) < 2 {
		return 0, false
	}
	first, last := samples[0], samples[len(samples)-1]
	span := last.at.Sub(first.at)
	if span < cpuWindow-sampleEvery || last.ticks < first.ticks {
		return 0, false
	}
	used = float64(last.ticks-first.ticks) / clockTicks / span.Seconds()
	return used, used > limit
}

// sampleNamespace sums resident memory and CPU ticks (its own and its
// reaped children's) over every process in the pid namespace ns.
func sampleNamespace(ns string) (rss int64, ticks uint64) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0
	}
	page := int64(os.Getpagesize())
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		base := "/proc/" + e.Name()
		if l, err := os.Readlink(base + "/ns/pid"); err != nil || l != ns {
			continue
		}
		if b, err := os.ReadFile(base + "/statm"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 1 {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				rss += n * page
			}
		}
		if b, err := os.ReadFile(base + "/stat"); err == nil {
			// Fields after the command name, which may hold spaces.
			s := string(b)
			if i := strings.LastIndexByte(s, ')'); i > 0 {
				f := strings.Fields(s[i+1:])
				// utime, stime, cutime, cstime are fields 14–17 of stat,
				// 11–14 after the name and state.
				for _, k := range []int{11, 12, 13, 14} {
					if k < len(f) {
						n, _ := strconv.ParseUint(f[k], 10, 64)
						ticks += n
					}
				}
			}
		}
	}
	return rss, ticks
}

// diskUsage sums the blocks under dir, never following a symlink.
func diskUsage(dir string) int64 {
	var total int64
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if n++; n > diskWalkMax {
			return filepath.SkipAll
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		}
		return nil
	})
	return total
}

// usage is an amount over a limit, rounded up to the MiB below 10 GiB (to
// the tenth of a GiB above), so it never reads as the limit itself: "65 MiB,
// over its 64 MiB limit", not "64 MiB, over its 64 MiB limit".
func usage(b int64) string {
	const mi, gi = 1 << 20, 1 << 30
	if b < 10*gi {
		return fmt.Sprintf("%d MiB", (b+mi-1)/mi)
	}
	tenths := (b*10 + gi - 1) / gi
	return fmt.Sprintf("%d.%d GiB", tenths/10, tenths%10)
}

func size(b int64) string {
	const mi, gi = 1 << 20, 1 << 30
	if b >= gi && b%gi == 0 || b >= 10*gi {
		return fmt.Sprintf("%d GiB", b/gi)
	}
	if b >= gi {
		return fmt.Sprintf("%.1f GiB", float64(b)/gi)
	}
	return fmt.Sprintf("%d MiB", b/mi)
}

func cores(c float64) string {
	if c == 1 {
		return "1 core"
	}
	return strconv.FormatFloat(c, 'f', -1, 64) + " cores"
}
