// Package version says which build of addonwall this is.
package version

import "runtime/debug"

// Version is set at link time (-ldflags "-X ...version.Version=v1.2.3");
// otherwise it comes from the module's build information.
var Version = ""

// String returns the version, or "devel" when nothing records one.
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}
