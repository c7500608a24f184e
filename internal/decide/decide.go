// Package decide makes the mode decision for one add-on and holds every
// status word, card text and notice title in English and Spanish. It is
// pure: no file, environment, clock or network is read here, so the rules
// are tables and the words cannot drift between surfaces.
package decide

import (
	"fmt"

	v1alpha1 "github.com/addonwall/addonwall/api/v1alpha1"
)

// Host holds the host facts the decision needs, as gathered by the probe.
type Host struct {
	// BubblewrapInstalled is true when a bwrap binary was found.
	BubblewrapInstalled bool
	// BubblewrapUsable is true when the probe started a sandbox with it.
	BubblewrapUsable bool
	// ProbeReason is the probe's CamelCase reason when bwrap is installed
	// but unusable (e.g. UserNamespacesRefused); it becomes the Detail.
	ProbeReason string
	// ProbeMessage says what the probe saw and what to fix.
	ProbeMessage string
	// SetprivAvailable is true when `setpriv --no-new-privs` ran here.
	SetprivAvailable bool
}

// Addon holds one add-on's own facts, from its AddonWall spec.
type Addon struct {
	// OwnerChoice is walled, notWalled or empty (no choice).
	OwnerChoice v1alpha1.OwnerChoice
	// CrowDb is true when its server code opens crow.db.
	CrowDb bool
	// Storage is true when it holds the root object-storage credentials.
	Storage bool
	// ApprovedBackend is true for a data backend command the owner approved.
	ApprovedBackend bool
	// Transport is stdio (or empty, meaning stdio) or http.
	Transport v1alpha1.Transport
	// InputProblem is the importer's finding when the add-on's files are bad.
	InputProblem *v1alpha1.InputProblem
}

// Input is everything the decision reads. Nothing in it comes from a file
// or a process an add-on can write.
type Input struct {
	Switches Switches
	Host     Host
	Addon    Addon
}

// Spawn is how the add-on's process is started.
type Spawn string

// Spawns.
const (
	// SpawnNone: no process is started (off, or an http add-on).
	SpawnNone Spawn = "none"
	// SpawnWalled: the child runs inside bubblewrap.
	SpawnWalled Spawn = "walled"
	// SpawnPlain: the child runs as Crow ran it before walls existed.
	SpawnPlain Spawn = "plain"
	// SpawnSetpriv: no bubblewrap on this computer; the child runs under
	// `setpriv --no-new-privs`.
	SpawnSetpriv Spawn = "setpriv"
)

// Decision is the answer for one add-on.
type Decision struct {
	// Mode is Walled, NotWalled or Off.
	Mode v1alpha1.Mode
	// Reason is one of the api's mode reasons; Word(Reason) is its status word.
	Reason string
	// Spawn says whether and how a process is started.
	Spawn Spawn
	// BindCrowDatabase is true when the walled spawn binds Crow's data
	// folder read-write for crow.db and its journals (every other entry
	// masked). Only ever true with SpawnWalled.
	BindCrowDatabase bool
	// Detail is the machine-facing detail behind Reason: the probe's reason
	// and message, or the input problem's file, key and message. It is text
	// from outside and must be made inert (Inert) before it is shown.
	Detail string
}

// Walled reports whether the spawn goes through bubblewrap. It is true for
// every Walled decision and also for NotWalled decisions that keep a
// residual (SharesCrowDatabase, UsesAllStorage): those still run in a wall.
func (d Decision) Walled() bool { return d.Spawn == SpawnWalled }

// Decide decides one add-on. The order is fixed and every step returns:
//
//  1. bad input (the importer's problem, or an owner choice or transport
//     that is not one of the api's values): off, InvalidInput;
//  2. an http add-on: Crow starts no process for it, so there is nothing
//     to wall; its word says it is reached over HTTP rather than calling it
//     "not walled", which would suggest a process here runs unprotected;
//  3. an approved data backend: runs unwalled, ApprovedCommands;
//  4. the kill switch: KillSwitch; 5. the per-host default off:
//     HostDefaultOff; 6. the owner's "Run without the wall": OwnerChoice —
//     these spawn the child exactly as Crow did before walls (no setpriv),
//     so a rollback is a rollback;
//  7. bubblewrap not installed: NoBubblewrap, with setpriv where it exists;
//  8. bubblewrap installed but unusable: off, BubblewrapUnusable, with the
//     probe's reason as Detail — there is no weaker tier;
//  9. crow.db readers: NotWalled, SharesCrowDatabase, but the spawn is still
//     walled with Crow's data folder bound for crow.db (seed, "Add-ons that
//     share Crow's database"): the word owns up to the residual, the wall
//     keeps everything else out;
//  10. storage readers: NotWalled, UsesAllStorage, still walled — the wall
//     holds; the root storage credentials it is handed are the residual;
//  11. walled.
//
// The host facts (7, 8) come before the crow.db and storage residuals
// because those two still need a wall: on a computer with no bubblewrap
// every add-on reads "not walled on this computer", as the seed says, and
// with a broken bubblewrap they stay off like any other walled add-on.
func Decide(in Input) Decision {
	a := in.Addon
	if a.InputProblem != nil {
		return off(v1alpha1.ReasonInvalidInput, problemDetail(a.InputProblem))
	}
	switch a.OwnerChoice {
	case "", v1alpha1.ChoiceWalled, v1alpha1.ChoiceNotWalled:
	default:
		return off(v1alpha1.ReasonInvalidInput, fmt.Sprintf("addon-walls.json: choice %q is not walled or notWalled", string(a.OwnerChoice)))
	}
	switch a.Transport {
	case "", v1alpha1.TransportStdio:
	case v1alpha1.TransportHTTP:
		return Decision{Mode: v1alpha1.ModeNotWalled, Reason: v1alpha1.ReasonHTTPAddon, Spawn: SpawnNone}
	default:
		return off(v1alpha1.ReasonInvalidInput, fmt.Sprintf("mcp-addons.json: transport %q is not stdio or http", string(a.Transport)))
	}
	if a.ApprovedBackend {
		return notWalled(v1alpha1.ReasonApprovedCommands, SpawnPlain)
	}
	if in.Switches.KillSwitch {
		return notWalled(v1alpha1.ReasonKillSwitch, SpawnPlain)
	}
	if in.Switches.HostDefault != HostWalled {
		return notWalled(v1alpha1.ReasonHostDefaultOff, SpawnPlain)
	}
	if a.OwnerChoice == v1alpha1.ChoiceNotWalled {
		return notWalled(v1alpha1.ReasonOwnerChoice, SpawnPlain)
	}
	h := in.Host
	if !h.BubblewrapInstalled {
		s := SpawnPlain
		if h.SetprivAvailable {
			s = SpawnSetpriv
		}
		return notWalled(v1alpha1.ReasonNoBubblewrap, s)
	}
	if !h.BubblewrapUsable {
		return off(v1alpha1.ReasonBubblewrapUnusable, probeDetail(h))
	}
	if a.CrowDb {
		d := notWalled(v1alpha1.ReasonSharesCrowDatabase, SpawnWalled)
		d.BindCrowDatabase = true
		return d
	}
	if a.Storage {
		return notWalled(v1alpha1.ReasonUsesAllStorage, SpawnWalled)
	}
	return Decision{Mode: v1alpha1.ModeWalled, Reason: v1alpha1.ReasonWalled, Spawn: SpawnWalled}
}

func off(reason, detail string) Decision {
	return Decision{Mode: v1alpha1.ModeOff, Reason: reason, Spawn: SpawnNone, Detail: detail}
}

func notWalled(reason string, s Spawn) Decision {
	return Decision{Mode: v1alpha1.ModeNotWalled, Reason: reason, Spawn: s}
}

func problemDetail(p *v1alpha1.InputProblem) string {
	if p.Key == "" {
		return p.File + ": " + p.Message
	}
	return p.File + ": " + p.Key + ": " + p.Message
}

func probeDetail(h Host) string {
	r := h.ProbeReason
	if r == "" {
		r = v1alpha1.ReasonProbeFailed
	}
	if h.ProbeMessage == "" {
		return r
	}
	return r + ": " + h.ProbeMessage
}
