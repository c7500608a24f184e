// Package crowhome reads Crow's own files — mcp-addons.json, bundle
// manifests, the checkout's registry/addon-profiles.json, an add-on's compose
// file and addon-walls.json — strictly, and is the one writer of
// addon-walls.json.
//
// Every reader returns typed values or a *FileError naming the file, the key
// (a JSON path such as ["kb"].args[2]) and what was wrong. Nothing is
// defaulted silently: a value that is not what the format says is an error,
// and the caller decides what stops (one add-on, never the controller).
//
// The package never logs. Environment values from mcp-addons.json leave it
// only inside Entry.Env, whose printed, JSON and log forms carry key names
// and never values.
package crowhome
