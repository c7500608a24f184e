package runner

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/crowhome"
	"github.com/addonwall/addonwall/internal/decide"
	"github.com/addonwall/addonwall/internal/notice"
	"github.com/addonwall/addonwall/internal/owner"
	"github.com/addonwall/addonwall/internal/profile"
)

// settleMax bounds how long the boot notices wait for every add-on to be
// decided.
const settleMax = 30 * time.Second

// notices sends the boot notices once the add-ons are decided, and the
// "changed outside Crow" note when addon-walls.json changes under it.
type notices struct {
	o       Options
	sw      decide.Switches
	c       client.Reader
	written *owner.Written

	mu       sync.Mutex
	lastSeen string
	seen     bool

	// imported is closed once the importer first brought the store in
	// line with the Crow home: before that, the add-ons are not all there.
	imported     chan struct{}
	importedOnce sync.Once
}

// synced is the importer's Synced hook.
func (n *notices) synced() { n.importedOnce.Do(func() { close(n.imported) }) }

func (n *notices) dst() notice.Destination {
	return notice.Destination{DataDir: n.o.Paths.DataDir, CrowHome: n.o.Paths.CrowHome}
}

// boot waits until every add-on was decided (or settleMax), plans the boot
// notices and delivers them; a once-per-computer marker is set only after
// its notice went out.
func (n *notices) boot(ctx context.Context) error {
	log := n.o.Log.WithName("notices")
	var walls wallsv1.AddonWallList
	deadline := time.Now().Add(settleMax)
	select {
	case <-ctx.Done():
		return nil
	case <-n.imported:
	case <-time.After(settleMax):
		log.Info("the Crow home was not imported in time; the boot notices speak for what is in the store")
	}
	for {
		if err := n.c.List(ctx, &walls, client.InNamespace(n.o.Namespace)); err == nil && decided(walls.Items) {
			break
		}
		if time.Now().After(deadline) {
			log.Info("not every add-on was decided in time; the boot notices speak for those that were")
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
	in := notice.BootInput{Switches: n.sw, Lang: decide.LangEN}
	if w, err := crowhome.ReadWalls(n.o.Paths.WallsFile()); err == nil {
		_, in.Announced.WallsOn = w.Announced[crowhome.AnnounceWallsOn]
		_, in.Announced.KillSwitch = w.Announced[crowhome.AnnounceKillSwitch]
	} else {
		// Markers that cannot be read are not guessed: the once-per-computer
		// notes wait until the file is valid again.
		in.Announced = notice.Announced{WallsOn: true, KillSwitch: true}
	}
	for _, w := range walls.Items {
		if w.Status.Mode == "" {
			continue
		}
		in.Entries = append(in.Entries, notice.Entry{ID: w.Name, Mode: w.Status.Mode, Reason: w.Status.Reason, Reach: decide.ReachOf(w.Spec.Profile)})
	}
	for _, p := range notice.PlanBoot(in) {
		ch, err := notice.Deliver(ctx, n.dst(), p.Notice)
		if err != nil {
			log.Info("a notice could not be delivered; it is tried again at the next boot", "kind", string(p.Notice.Kind), "error", err.Error())
			continue
		}
		log.Info("notice delivered", "kind", string(p.Notice.Kind), "to", string(ch))
		var key crowhome.Announcement
		switch p.Marker {
		case notice.MarkerWallsOn:
			key = crowhome.AnnounceWallsOn
		case notice.MarkerKillSwitch:
			key = crowhome.AnnounceKillSwitch
		default:
			continue
		}
		if err := n.markAnnounced(ctx, key); err != nil {
			log.Info("the notice went out but its marker could not be set; it may be sent again", "error", err.Error())
		}
	}
	return nil
}

// markAnnounced sets a once-per-computer marker in addon-walls.json. An
// edit made outside Crow that the importer has not read yet would be
// folded into this write and never seen as an edit, so the version on
// disk is observed first: its "changed outside Crow" note still goes out.
func (n *notices) markAnnounced(ctx context.Context, key crowhome.Announcement) error {
	file := n.o.Paths.WallsFile()
	if w, err := crowhome.ReadWalls(file); err == nil {
		n.observeSum(ctx, w.SHA256) // as the importer reads it
	}
	sum, err := crowhome.MarkAnnounced(file, key, time.Now())
	n.written.Add(sum)
	return err
}

func decided(ws []wallsv1.AddonWall) bool {
	for _, w := range ws {
		if w.Status.Mode == "" || w.Status.ObservedGeneration != w.Generation {
			return false
		}
	}
	return true
}

// observe is the importer's hook: a version of addon-walls.json that the
// controller did not write, after the first one seen, is an edit made
// outside Crow.
func (n *notices) observe(ctx context.Context, h profile.Home) {
	sum := ""
	if h.Walls != nil {
		sum = h.Walls.SHA256
	}
	n.observeSum(ctx, sum)
}

// observeSum judges one version of addon-walls.json by its sha256 ("" for
// no file).
func (n *notices) observeSum(ctx context.Context, sum string) {
	n.mu.Lock()
	first, changed := !n.seen, sum != n.lastSeen
	n.seen, n.lastSeen = true, sum
	n.mu.Unlock()
	if first || !changed || n.written.Ours(sum) {
		return
	}
	for _, p := range notice.PlanSettingsChanged(n.sw, decide.LangEN) {
		if _, err := notice.Deliver(ctx, n.dst(), p.Notice); err != nil {
			n.o.Log.WithName("notices").Info("the settings-changed notice could not be delivered", "error", err.Error())
		}
	}
}

func (n *notices) runnable() manager.Runnable {
	return manager.RunnableFunc(n.boot)
}
