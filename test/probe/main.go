// Command probe runs inside a wall as the add-on and reports, as one JSON
// object on stdout (the shape is package report), what it could see and do
// there: its own status (capabilities, no_new_privs, seccomp), every visible
// process with its descriptors and whether its environ, cmdline and memory
// are open to it, the network interfaces, a list of system calls the wall
// must refuse beside positive controls, and its environment variable names.
// Tests run it once with the filter and once without to show the filter is
// what refuses.
//
// Usage:
//
//	probe [report]              the full report
//	probe read PATH...          read each path (up to 1 MiB)
//	probe write PATH...         append a line to each path, creating it
//	probe connect TARGET...     dial unix:PATH or tcp:HOST:PORT
//	probe mcp                   an MCP server on stdio with one tool, "probe"
//
// PROBE_NEEDLES (comma-separated) are strings to look for in every other
// process's environ and cmdline and in what `read` reads; hits are reported
// by index, never by value.
//
// It is built with CGO_ENABLED=0 so it runs in a wall with nothing but
// itself bound in.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sort"

	"github.com/addonwall/addonwall/test/probe/report"
	"golang.org/x/sys/unix"
)

const usage = `usage: probe [report] | read PATH... | write PATH... | connect unix:PATH|tcp:HOST:PORT... | mcp`

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) == 0 {
		args = []string{"report"}
	}
	ctx := context.Background()
	needles := parseNeedles(os.Getenv("PROBE_NEEDLES"))
	switch op, rest := args[0], args[1:]; op {
	case "__try":
		if len(rest) != 1 {
			break
		}
		return runTry(rest[0])
	case "report":
		if len(rest) != 0 {
			break
		}
		return emit(collect(ctx, request{full: true}, needles))
	case "read", "write", "connect":
		if len(rest) == 0 {
			break
		}
		req := request{}
		switch op {
		case "read":
			req.read = rest
		case "write":
			req.write = rest
		case "connect":
			req.connect = rest
		}
		r := collect(ctx, req, needles)
		r.Op = op
		return emit(r)
	case "mcp":
		if len(rest) != 0 {
			break
		}
		if err := serveMCP(ctx, needles); err != nil {
			fmt.Fprintf(os.Stderr, "probe: mcp: %v\n", err)
			return 1
		}
		return 0
	case "help", "-h", "--help":
		fmt.Println(usage)
		return 0
	}
	fmt.Fprintln(os.Stderr, usage)
	return 2
}

func emit(r *report.Report) int {
	b, err := json.Marshal(r)
	if err != nil {
		fmt.Fprintf(os.Stderr, "probe: encoding the report: %v\n", err)
		return 1
	}
	if _, err := os.Stdout.Write(append(b, '\n')); err != nil {
		return 1
	}
	return 0
}

// request is what to examine beyond the basics.
type request struct {
	full                 bool
	read, write, connect []string
}

func collect(ctx context.Context, req request, needles []string) *report.Report {
	r := &report.Report{
		Version:     report.Version,
		Op:          "report",
		PID:         os.Getpid(),
		PPID:        os.Getppid(),
		UID:         os.Getuid(),
		GID:         os.Getgid(),
		EnvNames:    envNames(os.Environ()),
		NeedleCount: len(needles),
	}
	fail := func(what string, err error) {
		r.Errors = append(r.Errors, fmt.Sprintf("%s: %v", what, err))
	}
	var err error
	if r.Hostname, err = os.Hostname(); err != nil {
		fail("hostname", err)
	}
	if r.Cwd, err = os.Getwd(); err != nil {
		fail("cwd", err)
	}
	if r.Self, _, _, err = readStatus("/proc/self/status"); err != nil {
		fail("/proc/self/status", err)
	}
	for fd := range r.StdioTTY {
		_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		r.StdioTTY[fd] = err == nil
	}

	if req.full {
		if r.Namespaces, err = namespaces(); err != nil {
			fail("/proc/self/ns", err)
		}
		procs, hits, err := scanProcesses(needles)
		if err != nil {
			fail("processes", err)
		}
		r.Processes, r.Needles = procs, append(r.Needles, hits...)

		if r.Interfaces.Proc, err = procInterfaces(); err != nil {
			r.Interfaces.ProcErr = errName(err)
		}
		if ifs, err := net.Interfaces(); err != nil {
			r.Interfaces.NetlinkErr = errName(err)
		} else {
			for _, i := range ifs {
				r.Interfaces.Netlink = append(r.Interfaces.Netlink, i.Name)
			}
			sort.Strings(r.Interfaces.Netlink)
		}

		// Last, so the process list above shows the wall at rest rather
		// than the attempts' children.
		r.Syscalls = runAttempts(ctx)
	}

	for _, p := range req.read {
		res, hits := readPath(p, needles)
		r.Paths, r.Needles = append(r.Paths, res), append(r.Needles, hits...)
	}
	for _, p := range req.write {
		r.Paths = append(r.Paths, writePath(p))
	}
	for _, t := range req.connect {
		r.Paths = append(r.Paths, connectTarget(t))
	}
	return r
}
