package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
)

// hashVersion changes when the plan's meaning changes, so an old hash never
// matches a new plan by accident.
const hashVersion = 1

// Hash is a stable digest of the plan for status (planHash). It covers the
// namespaces, the mounts, the command and the names of the child's
// variables; it leaves out their values, which can be secrets, so a changed
// value alone does not change the hash. The relay's socket folder is made
// afresh for every spawn, so its path and inode are left out too.
func (p *Plan) Hash() string {
	if p.Entry != nil {
		c := *p
		e := *p.Entry
		e.RelayDir = ""
		c.Entry = &e
		c.Mounts = append([]Mount(nil), p.Mounts...)
		for i := range c.Mounts {
			if c.Mounts[i].Dest == RelayDirPath {
				c.Mounts[i].Source, c.Mounts[i].Expect = "", FileID{}
			}
		}
		p = &c
	}
	names := make([]string, 0, len(p.Env))
	for k := range p.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	view := struct {
		Version  int      `json:"v"`
		Plan     *Plan    `json:"plan"`
		EnvNames []string `json:"envNames"`
	}{hashVersion, p, names}
	data, err := json.Marshal(view)
	if err != nil {
		// Every field is a plain value; Marshal cannot fail on it.
		panic("plan: hashing a plan: " + err.Error())
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
