package session

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	wallsv1 "github.com/addonwall/addonwall/api/v1alpha1"
)

// Evidence is what attestation read from a child's /proc entries, from
// outside the wall.
type Evidence struct {
	Seccomp    string
	NoNewPrivs string
	CapEff     string
	// SharedNamespaces are the namespaces the child shares with the
	// controller; a walled child shares none.
	SharedNamespaces []string
	// Interfaces are the network interfaces the child's namespace has.
	Interfaces []string
	// Err is why the evidence could not be read.
	Err error
}

// walledNamespaces are the namespaces a wall unshares.
var walledNamespaces = []string{"user", "pid", "ipc", "uts", "cgroup", "net", "mnt"}

// Attest reads the evidence of the process pid.
func Attest(pid int, walled bool, tier wallsv1.Tier) Evidence {
	var e Evidence
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		e.Err = fmt.Errorf("reading the child's status: %w", err)
		return e
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Seccomp":
			e.Seccomp = v
		case "NoNewPrivs":
			e.NoNewPrivs = v
		case "CapEff":
			e.CapEff = v
		}
	}
	for _, ns := range walledNamespaces {
		mine, err1 := os.Readlink(filepath.Join("/proc/self/ns", ns))
		theirs, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		if err1 != nil || err2 != nil {
			e.Err = fmt.Errorf("reading the %s namespace links", ns)
			return e
		}
		if mine == theirs {
			e.SharedNamespaces = append(e.SharedNamespaces, ns)
		}
	}
	dev, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/dev", pid))
	if err != nil {
		e.Err = fmt.Errorf("reading the child's interfaces: %w", err)
		return e
	}
	for i, line := range strings.Split(string(dev), "\n") {
		if i < 2 {
			continue
		}
		if name, _, ok := strings.Cut(line, ":"); ok {
			e.Interfaces = append(e.Interfaces, strings.TrimSpace(name))
		}
	}
	return e
}

// Verify says whether the evidence shows the wall the tier promises.
func (e Evidence) Verify(tier wallsv1.Tier) error {
	if e.Err != nil {
		return e.Err
	}
	var bad []string
	wantSeccomp := "2"
	if tier == wallsv1.TierWalledNoSeccomp {
		wantSeccomp = "0"
	}
	if e.Seccomp != wantSeccomp {
		bad = append(bad, fmt.Sprintf("Seccomp is %q, not %s", e.Seccomp, wantSeccomp))
	}
	if e.NoNewPrivs != "1" {
		bad = append(bad, fmt.Sprintf("NoNewPrivs is %q, not 1", e.NoNewPrivs))
	}
	if strings.Trim(e.CapEff, "0") != "" {
		bad = append(bad, fmt.Sprintf("CapEff is %s, not 0", e.CapEff))
	}
	if len(e.SharedNamespaces) > 0 {
		bad = append(bad, "shares the controller's "+strings.Join(e.SharedNamespaces, ", ")+" namespace")
	}
	if len(e.Interfaces) != 1 || e.Interfaces[0] != "lo" {
		bad = append(bad, "interfaces are "+strings.Join(e.Interfaces, ", ")+", not lo alone")
	}
	if len(bad) > 0 {
		return fmt.Errorf("the wall did not verify: %s", strings.Join(bad, "; "))
	}
	return nil
}

// String is the evidence in one line, for the WallVerified condition.
func (e Evidence) String() string {
	if e.Err != nil {
		return "no evidence: " + e.Err.Error()
	}
	shared := "none"
	if len(e.SharedNamespaces) > 0 {
		shared = strings.Join(e.SharedNamespaces, ",")
	}
	return fmt.Sprintf("Seccomp: %s, NoNewPrivs: %s, CapEff: %s, shared namespaces: %s, interfaces: %s",
		e.Seccomp, e.NoNewPrivs, e.CapEff, shared, strings.Join(e.Interfaces, ","))
}
