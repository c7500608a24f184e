package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WallHostSpec is what the operator sets for one host.
type WallHostSpec struct {
	// EgressDenyList are CIDRs the relay never dials, even when public.
	// +optional
	EgressDenyList []string `json:"egressDenyList,omitempty"`
	// RegistryMirrors are host:port entries prepare runs may also reach.
	// +optional
	RegistryMirrors []string `json:"registryMirrors,omitempty"`
}

// Switches are the host switches as read from the controller's own
// environment.
type Switches struct {
	// KillSwitch is true when CROW_ADDON_WALLS=off.
	// +optional
	KillSwitch bool `json:"killSwitch,omitempty"`
	// HostDefault is the per-host default as read: walled or off.
	// +optional
	HostDefault string `json:"hostDefault,omitempty"`
	// HostDefaultIgnored is true when CROW_ADDON_WALLS_DEFAULT held a value
	// other than walled or off, which reads as the code default.
	// +optional
	HostDefaultIgnored bool `json:"hostDefaultIgnored,omitempty"`
	// Effective is the answer: walled or off.
	// +optional
	Effective string `json:"effective,omitempty"`
}

// BubblewrapStatus is what the bubblewrap probe found.
type BubblewrapStatus struct {
	// Path is the bwrap binary that was probed.
	// +optional
	Path string `json:"path,omitempty"`
	// Version is what bwrap --version printed.
	// +optional
	Version string `json:"version,omitempty"`
	// Installed is true when a bwrap binary was found.
	// +optional
	Installed bool `json:"installed,omitempty"`
	// Usable is true when bwrap started a sandbox here.
	// +optional
	Usable bool `json:"usable,omitempty"`
	// Reason is the CamelCase reason of the probe's answer.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says what the probe saw and what to fix.
	// +optional
	Message string `json:"message,omitempty"`
	// Features are the options this bwrap has that the wall needs.
	// +optional
	Features []string `json:"features,omitempty"`
}

// SeccompStatus says whether this architecture has a filter table.
type SeccompStatus struct {
	// Arch is the machine architecture.
	// +optional
	Arch string `json:"arch,omitempty"`
	// HasTable is true when walls here get a seccomp filter.
	// +optional
	HasTable bool `json:"hasTable,omitempty"`
}

// ToolStatus says whether a helper program is there.
type ToolStatus struct {
	// Path is where it was found.
	// +optional
	Path string `json:"path,omitempty"`
	// Available is true when it ran.
	// +optional
	Available bool `json:"available,omitempty"`
}

// DockerStatus says whether docker answers and is watched.
type DockerStatus struct {
	// Reachable is true when the engine answered.
	// +optional
	Reachable bool `json:"reachable,omitempty"`
	// Version is the engine's version.
	// +optional
	Version string `json:"version,omitempty"`
	// Watched is true while the event watch is live.
	// +optional
	Watched bool `json:"watched,omitempty"`
	// Message says why docker is not reachable or not watched.
	// +optional
	Message string `json:"message,omitempty"`
}

// WallHostStatus is what the controller found on this host.
type WallHostStatus struct {
	// ObservedGeneration is the generation last fully handled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// +optional
	Switches Switches `json:"switches,omitempty"`
	// +optional
	Bubblewrap BubblewrapStatus `json:"bubblewrap,omitempty"`
	// +optional
	Seccomp SeccompStatus `json:"seccomp,omitempty"`
	// +optional
	Setpriv ToolStatus `json:"setpriv,omitempty"`
	// +optional
	Docker DockerStatus `json:"docker,omitempty"`
	// NoticesSent counts the notices delivered since the controller started.
	// +optional
	NoticesSent int32 `json:"noticesSent,omitempty"`
	// FirstBootMarker is when "walls now on" was delivered, if ever.
	// +optional
	FirstBootMarker string `json:"firstBootMarker,omitempty"`
	// Conditions are the host's conditions.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WallHost is one host that runs walls. Its name is the host's name.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=wh
// +kubebuilder:printcolumn:name="WALLS",type=string,JSONPath=`.status.switches.effective`
// +kubebuilder:printcolumn:name="BWRAP",type=string,JSONPath=`.status.conditions[?(@.type=="BubblewrapUsable")].status`
// +kubebuilder:printcolumn:name="DOCKER",type=string,JSONPath=`.status.conditions[?(@.type=="DockerWatched")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type WallHost struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WallHostSpec   `json:"spec,omitempty"`
	Status WallHostStatus `json:"status,omitempty"`
}

// WallHostList is a list of WallHosts.
//
// +kubebuilder:object:root=true
type WallHostList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WallHost `json:"items"`
}
