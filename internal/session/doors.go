package session

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
	"github.com/addonwall/addonwall/internal/doors"
	"github.com/addonwall/addonwall/internal/egress"
	"github.com/addonwall/addonwall/internal/plan"
	"github.com/addonwall/addonwall/internal/wallentry"
)

// doorSocketName is the door socket's name in the spawn's relay folder.
const doorSocketName = "door.sock"

// defaultGatewayPort is Crow's gateway port when CROW_GATEWAY_PORT is not
// set in the controller's environment.
const defaultGatewayPort = 3001

// doorSet is the door set a walled add-on gets: its own id's set from the
// core table, when its manifest names it and it is first-party. A manifest
// that names any other set is refused, and dropped says why: no door
// listener and no token, while the add-on itself still runs.
func doorSet(w *wallsv1.AddonWall) (set doors.Set, dropped []string) {
	set, err := doors.Allowed(w.Spec.Profile.Doors, w.Name, w.Spec.FirstParty)
	if err != nil {
		return doors.Set{}, []string{fmt.Sprintf("doors: %v; it gets no door and no token", err)}
	}
	if set.Empty() && w.Spec.Profile.Doors != "" {
		return doors.Set{}, []string{fmt.Sprintf("doors: Crow's core table has no door set for %q; it gets no door and no token", w.Name)}
	}
	return set, nil
}

// gatewayPort is the gateway's loopback port: the door's port inside the
// wall (where the add-on dials it, as CROW_GATEWAY_PORT tells it) and the
// gateway's on the host.
func (p *WallPreparer) gatewayPort() (int, error) {
	v, ok := p.Environ["CROW_GATEWAY_PORT"]
	if !ok || v == "" {
		return defaultGatewayPort, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("the controller's CROW_GATEWAY_PORT is not a port from 1 to 65535")
	}
	return n, nil
}

// doorEntry is where a wall's entry serves set's door: the gateway's port
// and the door socket as the wall shows it; the zero Door for an empty set.
func (p *WallPreparer) doorEntry(set doors.Set) (wallentry.Door, error) {
	if set.Empty() {
		return wallentry.Door{}, nil
	}
	port, err := p.gatewayPort()
	if err != nil {
		return wallentry.Door{}, fail(wallsv1.ReasonInvalidInput, "its doors: %w", err)
	}
	return wallentry.Door{Port: port, Socket: plan.RelayDirPath + "/" + doorSocketName}, nil
}

// wallDoor is one spawn's door: the door socket in its relay folder, served
// for this add-on only, and its token's grant. The zero value is no door.
type wallDoor struct {
	ln     net.Listener
	revoke func()
	// token is handed to bubblewrap once, then zeroed.
	token []byte
	entry wallentry.Door
}

// open mints the spawn's token and serves the door socket in dir, the
// spawn's relay folder, carrying accepted requests to the gateway.
func (d *wallDoor) open(p *WallPreparer, id string, set doors.Set, dir string) error {
	entry, err := p.doorEntry(set)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, doorSocketName)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return fail(wallsv1.ReasonWallFailed, "listening on its door socket: %w", err)
	}
	d.ln = ln
	tok, revoke, err := p.doors.Grant(id, set)
	if err != nil {
		_ = ln.Close()
		return fail(wallsv1.ReasonWallFailed, "minting its door token: %w", err)
	}
	d.token, d.revoke = tok, revoke
	d.entry = entry
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(entry.Port))
	srv := &doors.Server{
		Registry: &p.doors,
		Handler:  doors.Gateway(target),
		Log:      p.Log.WithName("doors").WithValues("addon", id),
		// Door refusals count in status beside the relay's, as
		// "127.0.0.1:PORT Door<Reason>".
		OnRefusal: func(r doors.Reason) {
			p.countRefusal(id, egress.Refusal{Time: time.Now(), Target: target, Reason: egress.Reason("Door" + string(r))})
		},
	}
	go func() { _ = srv.Serve(ln, id) }()
	return nil
}

// tokenText is the token file's content, and forgets the raw token.
func (d *wallDoor) tokenText() []byte {
	if d.token == nil {
		return nil
	}
	text := []byte(doors.EncodeToken(d.token))
	clear(d.token)
	d.token = nil
	return text
}

// close stops serving the door and revokes the token: a token of an ended
// spawn opens nothing, even if it was copied out.
func (d *wallDoor) close() {
	if d.ln != nil {
		_ = d.ln.Close()
	}
	if d.revoke != nil {
		d.revoke()
	}
	clear(d.token)
}
