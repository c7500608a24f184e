package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Transport is how Crow talks to an add-on.
// +kubebuilder:validation:Enum=stdio;http
type Transport string

// Transports Crow knows.
const (
	TransportStdio Transport = "stdio"
	TransportHTTP  Transport = "http"
)

// OwnerChoice is the owner's per-add-on choice from addon-walls.json.
// +kubebuilder:validation:Enum=walled;notWalled
type OwnerChoice string

// Owner choices. Empty means the owner made none.
const (
	ChoiceWalled    OwnerChoice = "walled"
	ChoiceNotWalled OwnerChoice = "notWalled"
)

// Launcher is how the add-on is started, copied from its mcp-addons.json
// entry. It names environment keys only; their values stay in
// mcp-addons.json and are read at spawn time, so no secret enters the store.
type Launcher struct {
	// Command is the program to run (a bare name, ./relative or absolute).
	// Empty for an http add-on.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Command string `json:"command,omitempty"`
	// Args are the program's arguments.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	// +optional
	Args []string `json:"args,omitempty"`
	// Cwd is the entry's working folder; empty means the install folder.
	// +optional
	Cwd string `json:"cwd,omitempty"`
	// EnvKeys are the names of the entry's environment keys (never values).
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z_][A-Za-z0-9_]{0,127}$`
	// +optional
	EnvKeys []string `json:"envKeys,omitempty"`
	// Transport is stdio (the default) or http.
	// +kubebuilder:default=stdio
	// +optional
	Transport Transport `json:"transport,omitempty"`
	// URL is the address of an http add-on.
	// +optional
	URL string `json:"url,omitempty"`
	// CommandSHA256 pins a relative or user-owned launcher.
	// +kubebuilder:validation:Pattern=`^[a-f0-9]{64}$`
	// +optional
	CommandSHA256 string `json:"commandSHA256,omitempty"`
	// NpxIntegrity is the integrity npm reported when the package was pinned.
	// Recorded, not enforced.
	// +optional
	NpxIntegrity string `json:"npxIntegrity,omitempty"`
}

// EnvField names an environment field of the add-on whose value is a path
// or an address, and says whether that value was typed by the owner (true)
// or is only the manifest's default (false).
type EnvField struct {
	// Name is the environment field's name.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]{0,127}$`
	Name string `json:"name"`
	// OwnerTyped is true when the owner typed the value.
	// +optional
	OwnerTyped bool `json:"ownerTyped,omitempty"`
}

// NetworkProfile is what the add-on may reach over the network.
type NetworkProfile struct {
	// Internet allows HTTPS CONNECT on port 443 to public addresses.
	// +optional
	Internet bool `json:"internet,omitempty"`
	// Hosts are fields whose values are exact host:port entries.
	// +optional
	Hosts []EnvField `json:"hosts,omitempty"`
}

// FilesProfile names the owner's files and folders the add-on may use.
type FilesProfile struct {
	// Read fields are bound read-only.
	// +optional
	Read []EnvField `json:"read,omitempty"`
	// Write fields are bound read-write.
	// +optional
	Write []EnvField `json:"write,omitempty"`
	// OAuthDir names the field holding an owner-named token file; its
	// folder is bound read-write.
	// +optional
	OAuthDir *EnvField `json:"oauthDir,omitempty"`
}

// ComposePort is a port the add-on's own compose file publishes.
type ComposePort struct {
	// Address is the host address the port is published on.
	Address string `json:"address"`
	// Port is the host port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
	// Protocol is tcp or udp.
	// +kubebuilder:validation:Enum=tcp;udp
	Protocol string `json:"protocol"`
}

// Profile is what an add-on may reach, read from its manifest, the
// registry's addon-profiles.json and its compose file.
type Profile struct {
	// +optional
	Network NetworkProfile `json:"network,omitempty"`
	// +optional
	Files FilesProfile `json:"files,omitempty"`
	// OwnEnvFile binds <installDir>/.env read-only.
	// +optional
	OwnEnvFile bool `json:"ownEnvFile,omitempty"`
	// Doors names the door set the manifest asks for (only its own id counts).
	// +optional
	Doors string `json:"doors,omitempty"`
	// CrowDb is true when the add-on's server code opens crow.db.
	// +optional
	CrowDb bool `json:"crowDb,omitempty"`
	// Storage is true when the add-on holds the root object-storage credentials.
	// +optional
	Storage bool `json:"storage,omitempty"`
	// StateDirs are the Crow-home state folders from Crow's core table.
	// +optional
	StateDirs []string `json:"stateDirs,omitempty"`
	// ComposePorts are the ports the add-on's compose file publishes.
	// +optional
	ComposePorts []ComposePort `json:"composePorts,omitempty"`
}

// Limits are watched from outside the wall; a child over one is stopped.
type Limits struct {
	// Memory is the most resident memory the wall may use (default 512Mi).
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
	// CPU is the most cores the wall may use, averaged over 30 s (default 1).
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// Disk is the most the data folder may hold (default 1Gi).
	// +optional
	Disk *resource.Quantity `json:"disk,omitempty"`
}

// InputProblem is why the importer could not read an add-on's files. An
// add-on with a problem stays off, with the file and key in its reason.
type InputProblem struct {
	// File is the file that was wrong.
	File string `json:"file"`
	// Key is the key (a JSON path) that was wrong, if one was.
	// +optional
	Key string `json:"key,omitempty"`
	// Message says what was wrong.
	Message string `json:"message"`
}

// AddonWallSpec is the desired wall of one add-on.
type AddonWallSpec struct {
	// InstallDir is the add-on's install folder, <CROW_HOME>/bundles/<id>.
	// +optional
	InstallDir string `json:"installDir,omitempty"`
	// FirstParty is true for Crow's own add-ons (policy read from the checkout).
	// +optional
	FirstParty bool `json:"firstParty,omitempty"`
	// Linked is true when the add-on runs code from outside its install folder.
	// +optional
	Linked bool `json:"linked,omitempty"`
	// ApprovedBackend is true for a data backend command the owner approved.
	// +optional
	ApprovedBackend bool `json:"approvedBackend,omitempty"`
	// Launcher is how the add-on starts.
	Launcher Launcher `json:"launcher"`
	// OwnerChoice is the owner's choice from addon-walls.json.
	// +optional
	OwnerChoice OwnerChoice `json:"ownerChoice,omitempty"`
	// Profile is what the add-on may reach.
	// +optional
	Profile Profile `json:"profile,omitempty"`
	// Limits are the wall's resource limits.
	// +optional
	Limits Limits `json:"limits,omitempty"`
	// InputProblem is set by the importer when the add-on's files are bad.
	// +optional
	InputProblem *InputProblem `json:"inputProblem,omitempty"`
}

// Mode is the state an add-on converged to.
// +kubebuilder:validation:Enum=Walled;NotWalled;Off
type Mode string

// Modes.
const (
	ModeWalled    Mode = "Walled"
	ModeNotWalled Mode = "NotWalled"
	ModeOff       Mode = "Off"
)

// Tier is how strong a wall is.
// +kubebuilder:validation:Enum=walled;walled-noseccomp
type Tier string

// Tiers.
const (
	TierWalled          Tier = "walled"
	TierWalledNoSeccomp Tier = "walled-noseccomp"
)

// FailureCard is the Fix-it card of an add-on that is off.
type FailureCard struct {
	// Ref is random and names an in-memory record of the running
	// controller; a card raised before a restart names nothing.
	Ref string `json:"ref"`
	// Reason is the CamelCase reason.
	Reason string `json:"reason"`
	// Message says what went wrong and what to do.
	Message string `json:"message"`
	// Since is when the card was raised.
	Since metav1.Time `json:"since"`
}

// SessionStatus sums up the add-on's connections.
type SessionStatus struct {
	// Active is how many connections are running now.
	// +optional
	Active int32 `json:"active,omitempty"`
	// LastStart is when the last child started.
	// +optional
	LastStart *metav1.Time `json:"lastStart,omitempty"`
	// LastExit is when the last child ended.
	// +optional
	LastExit *metav1.Time `json:"lastExit,omitempty"`
	// LastExitReason says why the last child ended.
	// +optional
	LastExitReason string `json:"lastExitReason,omitempty"`
}

// EgressStatus counts what the relay refused.
type EgressStatus struct {
	// Refusals counts refusals by stable reason.
	// +optional
	Refusals map[string]int64 `json:"refusals,omitempty"`
	// Latest are the newest refusals, newest first, as "host:port reason".
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Latest []string `json:"latest,omitempty"`
	// Dropped are manifest defaults that were dropped, with why.
	// +optional
	Dropped []string `json:"dropped,omitempty"`
}

// AddonWallStatus is what the controller observed and decided.
type AddonWallStatus struct {
	// ObservedGeneration is the generation last fully handled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Mode is walled, not walled or off.
	// +optional
	Mode Mode `json:"mode,omitempty"`
	// Tier is the wall's strength when walled.
	// +optional
	Tier Tier `json:"tier,omitempty"`
	// Reason is the CamelCase reason for Mode.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Word is the English status word for Reason.
	// +optional
	Word string `json:"word,omitempty"`
	// Reach is the one-line summary of what the add-on can reach.
	// +optional
	Reach string `json:"reach,omitempty"`
	// Failure is the Fix-it card when the add-on is off.
	// +optional
	Failure *FailureCard `json:"failure,omitempty"`
	// PlanHash is the digest of the reconciled bind plan.
	// +optional
	PlanHash string `json:"planHash,omitempty"`
	// CodeDigest is the digest of the read-only code trees.
	// +optional
	CodeDigest string `json:"codeDigest,omitempty"`
	// Sessions sums up the add-on's connections.
	// +optional
	Sessions SessionStatus `json:"sessions,omitempty"`
	// Egress counts what the relay refused.
	// +optional
	Egress EgressStatus `json:"egress,omitempty"`
	// Conditions are the add-on's conditions; see the ConditionType constants.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AddonWall is the wall of one add-on. Its namespace is the host's name and
// its name is the add-on's id.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=aw;walls
// +kubebuilder:printcolumn:name="ID",type=string,JSONPath=`.metadata.name`
// +kubebuilder:printcolumn:name="MODE",type=string,JSONPath=`.status.mode`
// +kubebuilder:printcolumn:name="WORD",type=string,JSONPath=`.status.word`
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type AddonWall struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AddonWallSpec   `json:"spec,omitempty"`
	Status AddonWallStatus `json:"status,omitempty"`
}

// AddonWallList is a list of AddonWalls.
//
// +kubebuilder:object:root=true
type AddonWallList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AddonWall `json:"items"`
}
