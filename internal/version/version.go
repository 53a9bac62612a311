// Package version reports the build's version.
package version

import "runtime/debug"

// Version is set at link time with -ldflags "-X .../version.Version=v1.2.3".
var Version = ""

// String returns the version, falling back to the module build info.
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
