// Package controllers holds addonwall's reconcilers: the importer that
// mirrors the Crow home into AddonWall specs, the AddonWall reconciler that
// converges each add-on to walled, not walled or off, and the WallHost
// reconciler that reports what this host can do. They speak only
// controller-runtime's client and cache, so the same code runs on the file
// store and on a Kubernetes API server.
package controllers
