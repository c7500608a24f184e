// Package report is the JSON shape the wall probe (test/probe) prints: what
// one process inside a wall could see and do. Tests decode it with Parse and
// assert on it; the probe is the only writer.
//
// The report never carries a secret's value: environment variables are listed
// by name, command lines by argument count and option names, file reads by
// length. Canaries are found with needles (PROBE_NEEDLES) and reported by
// index.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Version changes when a field changes meaning.
const Version = 1

// Report is one run of the probe.
type Report struct {
	Version int    `json:"version"`
	Op      string `json:"op"` // report, read, write, connect
	PID     int    `json:"pid"`
	PPID    int    `json:"ppid"`
	UID     int    `json:"uid"`
	GID     int    `json:"gid"`
	// Hostname is the UTS name the wall shows (PROC-22).
	Hostname string `json:"hostname"`
	Cwd      string `json:"cwd"`
	// Self is the probe's own /proc/self/status.
	Self Status `json:"self"`
	// StdioTTY says whether fds 0, 1 and 2 are terminals (ENV-07 wants pipes).
	StdioTTY [3]bool `json:"stdioTTY"`
	// Namespaces maps /proc/self/ns/* names to their link text, e.g.
	// "net" -> "net:[4026532281]".
	Namespaces map[string]string `json:"namespaces,omitempty"`
	// Processes is every process visible in /proc, the probe included.
	Processes  []Process  `json:"processes,omitempty"`
	Interfaces Interfaces `json:"interfaces"`
	// Syscalls is each attempted call, in a child process of its own.
	Syscalls []Syscall `json:"syscalls,omitempty"`
	// EnvNames are the probe's own environment variable names, sorted.
	EnvNames []string `json:"envNames"`
	Paths    []Path   `json:"paths,omitempty"`
	// NeedleCount is how many needles the probe was given.
	NeedleCount int         `json:"needleCount"`
	Needles     []NeedleHit `json:"needles,omitempty"`
	// Errors are parts the probe could not examine, so that a missing answer
	// is never mistaken for a refusal.
	Errors []string `json:"errors,omitempty"`
}

// Status holds lines of a /proc/<pid>/status file, verbatim ("" when the
// line is missing or the file unreadable).
type Status struct {
	Uid            string `json:"uid"`
	Gid            string `json:"gid"`
	CapInh         string `json:"capInh"`
	CapPrm         string `json:"capPrm"`
	CapEff         string `json:"capEff"`
	CapBnd         string `json:"capBnd"`
	CapAmb         string `json:"capAmb"`
	NoNewPrivs     string `json:"noNewPrivs"`
	Seccomp        string `json:"seccomp"`
	SeccompFilters string `json:"seccompFilters"`
}

// Access is the outcome of one attempt: OK, or the errno name (or error
// text when there was no errno).
type Access struct {
	OK    bool   `json:"ok"`
	Errno string `json:"errno,omitempty"`
}

// Process is what the probe could learn about one visible process.
type Process struct {
	PID    int    `json:"pid"`
	PPID   int    `json:"ppid"`
	Comm   string `json:"comm"`
	IsSelf bool   `json:"isSelf,omitempty"`
	Status Status `json:"status"`
	// Exe is the readlink of /proc/<pid>/exe.
	Exe     string  `json:"exe,omitempty"`
	ExeRead Access  `json:"exeRead"`
	Cmdline Cmdline `json:"cmdline"`
	Environ Environ `json:"environ"`
	FDs     FDs     `json:"fds"`
	// MemOpenRW is open("/proc/<pid>/mem", O_RDWR), closed at once (PROC-05).
	MemOpenRW Access `json:"memOpenRW"`
}

// Cmdline is a read of /proc/<pid>/cmdline without its values.
type Cmdline struct {
	Access
	Argc  int    `json:"argc"`
	Argv0 string `json:"argv0,omitempty"`
	// Options are the arguments that start with "--", as far as the first
	// "=", e.g. bubblewrap's "--setenv" or "--args" (PROC-03).
	Options []string `json:"options,omitempty"`
}

// Environ is a read of /proc/<pid>/environ: names only (PROC-02).
type Environ struct {
	Access
	Names []string `json:"names,omitempty"`
}

// FDs is a listing of /proc/<pid>/fd.
type FDs struct {
	Access
	Open []FD `json:"open,omitempty"`
}

// FD is one open descriptor and its readlink.
type FD struct {
	Num    int    `json:"num"`
	Target string `json:"target"`
	// CloseOnExec is O_CLOEXEC from /proc/<pid>/fdinfo (FlagsKnown false
	// when that could not be read). A descriptor a process inherited across
	// exec has it clear, and the Go runtime opens its own (cgroup files,
	// epoll, eventfd) with it set, so the probe's descriptors without it are
	// what the wall handed it (ENV-07, FS-08).
	CloseOnExec bool `json:"closeOnExec"`
	FlagsKnown  bool `json:"flagsKnown"`
}

// Interfaces lists the network interfaces two ways: /proc/net/dev, which
// needs no socket, and Go's net.Interfaces, which needs AF_NETLINK (refused
// by the wall's filter, so NetlinkErr is the evidence of that decision).
type Interfaces struct {
	Proc       []string `json:"proc"`
	ProcErr    string   `json:"procErr,omitempty"`
	Netlink    []string `json:"netlink,omitempty"`
	NetlinkErr string   `json:"netlinkErr,omitempty"`
}

// Syscall is one attempted call.
type Syscall struct {
	Name string `json:"name"`
	Call string `json:"call"` // what was called, with its arguments
	// Control marks a positive control: a call the wall is meant to let
	// through, beside the refusals on the same path.
	Control bool   `json:"control,omitempty"`
	Ret     int64  `json:"ret"`
	Errno   string `json:"errno,omitempty"` // errno name, "" on success
	// Signal is the signal that ended the attempt: one that killed it (SIGSYS
	// from the filter), or a fault the attempt caught (SIGSEGV from a kernel
	// without the ABI tried).
	Signal  string `json:"signal,omitempty"`
	Skipped string `json:"skipped,omitempty"`
	Failure string `json:"failure,omitempty"` // the probe could not run the attempt
}

// Outcome is "ok", the errno name, "signal:NAME", "skipped" or "failed".
func (s Syscall) Outcome() string {
	switch {
	case s.Failure != "":
		return "failed"
	case s.Skipped != "":
		return "skipped"
	case s.Signal != "":
		return "signal:" + s.Signal
	case s.Errno != "":
		return s.Errno
	}
	return "ok"
}

// Path is one read, write or connect.
type Path struct {
	Op     string `json:"op"`
	Target string `json:"target"`
	Access
	Bytes  int    `json:"bytes,omitempty"`  // bytes read (up to the cap) or written
	Detail string `json:"detail,omitempty"` // e.g. "timeout"
}

// NeedleHit is a needle found somewhere the probe looked.
type NeedleHit struct {
	Index int    `json:"index"` // position in PROBE_NEEDLES
	PID   int    `json:"pid,omitempty"`
	Where string `json:"where"` // environ, cmdline, read:<path>
	// Self is set for the probe's own process, where a needle passed to it is
	// expected: the positive control of the search.
	Self bool `json:"self,omitempty"`
}

// Parse decodes one report strictly: unknown fields, trailing data or a
// different Version are errors.
func Parse(b []byte) (*Report, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var r Report
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("probe report: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("probe report: trailing data after the object")
	}
	if r.Version != Version {
		return nil, fmt.Errorf("probe report: version %d, this reader knows %d", r.Version, Version)
	}
	return &r, nil
}

// Syscall returns the attempt named name.
func (r *Report) Syscall(name string) (Syscall, bool) {
	for _, s := range r.Syscalls {
		if s.Name == name {
			return s, true
		}
	}
	return Syscall{}, false
}

// Process returns the process with pid.
func (r *Report) Process(pid int) (Process, bool) {
	for _, p := range r.Processes {
		if p.PID == pid {
			return p, true
		}
	}
	return Process{}, false
}
