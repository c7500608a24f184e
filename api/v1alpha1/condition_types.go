package v1alpha1

// Condition types of an AddonWall. Ready is computed from the others and is
// never set by a reconcile step on its own.
const (
	// ReadyCondition sums up the others: True when the add-on converged to
	// walled or not walled and can be connected to.
	ReadyCondition = "Ready"
	// WalledCondition is True when the add-on runs inside its wall.
	WalledCondition = "Walled"
	// PlanValidCondition is True when the bind plan was built.
	PlanValidCondition = "PlanValid"
	// PackagesReadyCondition is True when the prepare runs succeeded or none
	// were needed.
	PackagesReadyCondition = "PackagesReady"
	// WallVerifiedCondition carries the evidence read from the last walled
	// child: Seccomp, NoNewPrivs, CapEff, namespaces and interfaces.
	WallVerifiedCondition = "WallVerified"
	// MigratedCondition is True when a linked add-on was migrated.
	MigratedCondition = "Migrated"
	// StalledCondition is True when nothing will change until the input does.
	StalledCondition = "Stalled"
)

// Condition types of a WallHost.
const (
	// WallsOnCondition is True when walls are on for this host.
	WallsOnCondition = "WallsOn"
	// BubblewrapUsableCondition is True when the bubblewrap probe started a sandbox.
	BubblewrapUsableCondition = "BubblewrapUsable"
	// DockerWatchedCondition is True while the docker event watch is live.
	DockerWatchedCondition = "DockerWatched"
)

// Reasons for an AddonWall's mode. Each has a status word in English and
// Spanish (internal/decide); the English word is the seed's.
const (
	// ReasonWalled: the add-on runs inside its wall. Word "walled".
	ReasonWalled = "Walled"
	// ReasonSharesCrowDatabase: its server code opens crow.db.
	ReasonSharesCrowDatabase = "SharesCrowDatabase"
	// ReasonUsesAllStorage: it holds the root object-storage credentials.
	ReasonUsesAllStorage = "UsesAllStorage"
	// ReasonOwnerChoice: the owner pressed "Run without the wall".
	ReasonOwnerChoice = "OwnerChoice"
	// ReasonHostDefaultOff: the per-host default is not walled.
	ReasonHostDefaultOff = "HostDefaultOff"
	// ReasonKillSwitch: CROW_ADDON_WALLS=off is set.
	ReasonKillSwitch = "KillSwitch"
	// ReasonNoBubblewrap: bubblewrap is not installed on this computer.
	ReasonNoBubblewrap = "NoBubblewrap"
	// ReasonApprovedCommands: an approved data backend.
	ReasonApprovedCommands = "ApprovedCommands"
	// ReasonHTTPAddon: an add-on Crow reaches over HTTP runs no process here.
	ReasonHTTPAddon = "HTTPAddon"

	// ReasonWallFailed: the wall could not be built, or the add-on failed inside it.
	ReasonWallFailed = "WallFailed"
	// ReasonBubblewrapUnusable: bubblewrap is installed but cannot start a sandbox here.
	ReasonBubblewrapUnusable = "BubblewrapUnusable"
	// ReasonInvalidInput: one of the add-on's files is wrong.
	ReasonInvalidInput = "InvalidInput"
	// ReasonPlanFailed: the bind plan could not be built.
	ReasonPlanFailed = "PlanFailed"
	// ReasonSeccompFailed: the seccomp filter could not be built.
	ReasonSeccompFailed = "SeccompFailed"
	// ReasonPackagesNotReady: a prepare run failed.
	ReasonPackagesNotReady = "PackagesNotReady"
	// ReasonWallNotVerified: the child's wall did not verify and it was ended.
	ReasonWallNotVerified = "WallNotVerified"
	// ReasonStopped: the child went away on its own.
	ReasonStopped = "Stopped"
	// ReasonOverLimit: the child went over a memory, CPU or disk limit.
	ReasonOverLimit = "OverLimit"
)

// Condition reasons that are not modes.
const (
	// ReasonReconciled: the step finished.
	ReasonReconciled = "Reconciled"
	// ReasonNotApplicable: the condition does not apply in this mode.
	ReasonNotApplicable = "NotApplicable"
	// ReasonNotYetSpawned: no child has run yet, so there is no evidence.
	ReasonNotYetSpawned = "NotYetSpawned"
	// ReasonVerified: the evidence matched the plan.
	ReasonVerified = "Verified"
	// ReasonNoPrepareSteps: the plan names no prepare run.
	ReasonNoPrepareSteps = "NoPrepareSteps"
	// ReasonProgressing: the controller is still working on it.
	ReasonProgressing = "Progressing"
	// ReasonUnknown: the facts needed are missing.
	ReasonUnknown = "Unknown"

	// ReasonWallsOn, ReasonWallsOff: whether walls are on for the host.
	ReasonWallsOn  = "WallsOn"
	ReasonWallsOff = "WallsOff"
	// ReasonBubblewrapMissing: no bwrap binary.
	ReasonBubblewrapMissing = "BubblewrapMissing"
	// ReasonUserNamespacesRefused: the kernel refused a user namespace.
	ReasonUserNamespacesRefused = "UserNamespacesRefused"
	// ReasonProbeTimedOut: the bubblewrap probe did not answer in time.
	ReasonProbeTimedOut = "ProbeTimedOut"
	// ReasonBubblewrapTooOld: bwrap lacks an option the wall needs.
	ReasonBubblewrapTooOld = "BubblewrapTooOld"
	// ReasonProbeFailed: the probe failed for another reason, named in the message.
	ReasonProbeFailed = "ProbeFailed"
	// ReasonBubblewrapUsable: the probe started a sandbox.
	ReasonBubblewrapUsable = "BubblewrapUsable"
	// ReasonDockerWatched, ReasonDockerUnreachable: the docker watch state.
	ReasonDockerWatched     = "DockerWatched"
	ReasonDockerUnreachable = "DockerUnreachable"
)

// Annotations.
const (
	// ReconcileRequestAnnotation asks for a reconcile when its value changes;
	// a status-only change never wakes the controller.
	ReconcileRequestAnnotation = "walls.addonwall.dev/reconcile-request"
	// ManagedByAnnotation marks objects the importer generated; the importer
	// deletes only objects it owns.
	ManagedByAnnotation = "walls.addonwall.dev/managed-by"
	// ManagedByImporter is the ManagedByAnnotation value of the importer.
	ManagedByImporter = "importer"
)
