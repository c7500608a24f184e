// Package hostprobe answers the WallHost reconciler's questions about this
// host — bubblewrap, seccomp, setpriv, docker — and caches the answers: a
// bubblewrap that started a sandbox is trusted for the life of the
// process; a failed probe is asked again after RetryFailed.
package hostprobe

import (
	"context"
	"runtime"
	"sync"
	"time"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/bwrap"
	"github.com/addonwall/addonwall/internal/dockerwatch"
	"github.com/addonwall/addonwall/internal/seccomp"
)

// RetryFailed is how long a failed bubblewrap probe is kept.
const RetryFailed = 5 * time.Minute

// Prober implements controllers.HostProber.
type Prober struct {
	// Options tune the bubblewrap probe.
	Options bwrap.ProbeOptions
	// Engine is the docker engine; nil means docker is not looked at.
	Engine *dockerwatch.Engine
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu     sync.Mutex
	last   *bwrap.Result
	probed time.Time
}

// Result returns the bubblewrap probe's answer, probing when the cached
// one is missing or a failure older than RetryFailed.
func (p *Prober) Result(ctx context.Context) bwrap.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.last != nil && (p.last.Usable || now.Sub(p.probed) < RetryFailed) {
		return *p.last
	}
	r := bwrap.Probe(ctx, p.Options)
	p.last, p.probed = &r, now
	return r
}

// Bubblewrap implements controllers.HostProber.
func (p *Prober) Bubblewrap(ctx context.Context) wallsv1.BubblewrapStatus {
	return p.Result(ctx).Status()
}

// Seccomp implements controllers.HostProber.
func (p *Prober) Seccomp() wallsv1.SeccompStatus {
	return wallsv1.SeccompStatus{Arch: runtime.GOARCH, HasTable: seccomp.HasTable(runtime.GOARCH)}
}

// Setpriv implements controllers.HostProber.
func (p *Prober) Setpriv(ctx context.Context) wallsv1.ToolStatus {
	path := p.Result(ctx).Setpriv
	return wallsv1.ToolStatus{Path: path, Available: path != ""}
}

// Docker implements controllers.HostProber.
func (p *Prober) Docker(ctx context.Context) wallsv1.DockerStatus {
	if p.Engine == nil {
		return wallsv1.DockerStatus{Message: "docker is not looked at by this controller"}
	}
	v, err := p.Engine.Version(ctx)
	if err != nil {
		return wallsv1.DockerStatus{Message: err.Error()}
	}
	return wallsv1.DockerStatus{Reachable: true, Version: v, Watched: p.Engine.Live()}
}

func (p *Prober) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}
