package report

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	good := `{"version":1,"op":"report","pid":2,"ppid":1,"uid":0,"gid":0,"hostname":"h","cwd":"/",` +
		`"self":{"uid":"","gid":"","capInh":"","capPrm":"","capEff":"","capBnd":"","capAmb":"","noNewPrivs":"1","seccomp":"2","seccompFilters":"1"},` +
		`"stdioTTY":[false,false,false],"interfaces":{"proc":["lo"]},"envNames":[],"needleCount":0,` +
		`"syscalls":[{"name":"clone3","call":"clone3(NULL, 0)","ret":-1,"errno":"ENOSYS"}]}`
	r, err := Parse([]byte(good))
	if err != nil {
		t.Fatalf("a good report was refused: %v", err)
	}
	if s, ok := r.Syscall("clone3"); !ok || s.Outcome() != "ENOSYS" {
		t.Errorf("Syscall(clone3) = %+v, %v", s, ok)
	}
	if _, ok := r.Syscall("nope"); ok {
		t.Error("Syscall found an attempt that is not there")
	}

	bad := map[string]string{
		"unknown field": strings.Replace(good, `"op":`, `"extra":1,"op":`, 1),
		"trailing data": good + `{}`,
		"other version": strings.Replace(good, `"version":1`, `"version":2`, 1),
		"not json":      `probe: usage`,
		"empty":         ``,
	}
	for name, in := range bad {
		if _, err := Parse([]byte(in)); err == nil {
			t.Errorf("%s: Parse accepted it", name)
		}
	}
}

func TestOutcome(t *testing.T) {
	for want, s := range map[string]Syscall{
		"ok":            {Ret: 3},
		"EPERM":         {Ret: -1, Errno: "EPERM"},
		"signal:SIGSYS": {Signal: "SIGSYS"},
		"skipped":       {Skipped: "x86 only"},
		"failed":        {Failure: "timed out", Signal: "SIGKILL"},
	} {
		if got := s.Outcome(); got != want {
			t.Errorf("%+v: Outcome() = %q, want %q", s, got, want)
		}
	}
}
