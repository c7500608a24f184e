// Package plan builds the bind plan of one walled spawn: a pure function from
// the facts planfacts gathered (paths, scans, owner grants, environment) to a
// typed, validated Plan of namespaces, ordered mounts, working folder,
// command and environment. It never touches the filesystem, so every
// security rule of "What is bound" is a row in a table test.
//
// Decisions the seed leaves open, made here:
//   - HOME is the add-on's data folder; XDG_* and the npm/uv caches sit
//     below it. The wall owns these names, the proxy variables, TMPDIR and
//     CROW_ADDON_DOOR_TOKEN_FILE; the add-on's entry cannot override them.
//   - /etc is not bound whole: only a short list (certificates, passwd,
//     group, nsswitch, localtime, alternatives, ld.so), and /etc/hosts is
//     the wall's own loopback-only file.
//   - Besides .env and .mcp.json, .env.* and .envrc are masked too.
//   - A file with more names than the scanned trees show (a hard link whose
//     other name lies outside) is masked: it may be an alias of a secret an
//     add-on linked while it ran unwalled.
//   - Paths under /tmp, /var/tmp, /dev/shm, /run, /proc, /sys and /dev are
//     never a bind source, and the trees scanned are bound at their real
//     paths, by fd.
package plan
