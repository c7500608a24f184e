package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/addonwall/addonwall/test/probe/report"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// These tests run the probe outside any wall: they check the probe itself
// (what it reports, and that it never prints a value it was told to look
// for). What a wall refuses is tested where the wall is built, e.g.
// internal/seccomp's TestFilterUnderBubblewrap.

func TestHelpers(t *testing.T) {
	if got := parseNeedles(",a,,b,"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("parseNeedles = %q", got)
	}
	if got := parseNeedles(""); got != nil {
		t.Errorf("parseNeedles(\"\") = %q, want none", got)
	}
	argc, argv0, opts := describeArgs([]byte("bwrap\x00--setenv\x00SECRET\x00value\x00--args=3\x00--\x00x\x00"))
	if argc != 7 || argv0 != "bwrap" || !slices.Equal(opts, []string{"--setenv", "--args"}) {
		t.Errorf("describeArgs = %d %q %q", argc, argv0, opts)
	}
	if argc, _, _ := describeArgs(nil); argc != 0 {
		t.Errorf("describeArgs(empty) argc = %d", argc)
	}
	if got := envNames([]string{"B=2", "A=x=y", "", "C"}); !slices.Equal(got, []string{"A", "B", "C"}) {
		t.Errorf("envNames = %q", got)
	}
	hits := findNeedles([]string{"zz", "cat"}, []byte("a cat"), 7, "environ", false)
	if len(hits) != 1 || hits[0] != (report.NeedleHit{Index: 1, PID: 7, Where: "environ"}) {
		t.Errorf("findNeedles = %+v", hits)
	}
}

func TestCloseOnExecFromFdinfo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cloexec := range []bool{true, false} {
		flags := unix.O_RDONLY
		if cloexec {
			flags |= unix.O_CLOEXEC
		}
		fd, err := unix.Open(path, flags, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, known := closeOnExec(filepath.Join("/proc/self/fdinfo", strconv.Itoa(fd)))
		unix.Close(fd)
		if !known || got != cloexec {
			t.Errorf("fd opened with cloexec=%v: read %v (known %v)", cloexec, got, known)
		}
	}
}

var probeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "probe-test-")
	if err != nil {
		panic(err)
	}
	probeBin = filepath.Join(dir, "probe")
	cmd := exec.Command("go", "build", "-o", probeBin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("building the probe: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func runProbe(t *testing.T, env []string, args ...string) (*report.Report, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, probeBin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("probe %v: %v\n%s", args, err, stderr.String())
	}
	r, err := report.Parse(stdout.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	return r, stdout.Bytes()
}

func TestPaths(t *testing.T) {
	dir := t.TempDir()
	const canary = "canary-5d1f0a"
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("x="+canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"PROBE_NEEDLES=" + canary}

	r, out := runProbe(t, env, "read", secret, filepath.Join(dir, "missing"), dir)
	if r.Op != "read" || len(r.Paths) != 3 {
		t.Fatalf("report: %+v", r)
	}
	if p := r.Paths[0]; !p.OK || p.Bytes != len(canary)+3 {
		t.Errorf("read of a readable file: %+v", p)
	}
	if p := r.Paths[1]; p.OK || p.Errno != "ENOENT" {
		t.Errorf("read of a missing file: %+v", p)
	}
	if p := r.Paths[2]; p.OK || p.Errno != "EISDIR" {
		t.Errorf("read of a directory: %+v", p)
	}
	if len(r.Needles) != 1 || r.Needles[0].Where != "read:"+secret || r.NeedleCount != 1 {
		t.Errorf("needle hits %+v (count %d), want one in the read", r.Needles, r.NeedleCount)
	}
	if bytes.Contains(out, []byte(canary)) {
		t.Errorf("the report prints the needle's value: %s", out)
	}

	target := filepath.Join(dir, "new")
	r, _ = runProbe(t, nil, "write", target, filepath.Join(dir, "no", "such", "dir"))
	if p := r.Paths[0]; !p.OK || p.Bytes == 0 {
		t.Errorf("write to a writable folder: %+v", p)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "addonwall-probe\n" {
		t.Errorf("written file: %q, %v", b, err)
	}
	if p := r.Paths[1]; p.OK || p.Errno != "ENOENT" {
		t.Errorf("write under a missing folder: %+v", p)
	}
}

func TestConnect(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	// A port that was just free: nothing listens there.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	r, _ := runProbe(t, nil, "connect",
		"unix:"+sock, "unix:"+filepath.Join(dir, "none"),
		"tcp:"+tl.Addr().String(), "tcp:"+closedAddr, "udp:1.2.3.4:5")
	want := []struct {
		ok    bool
		errno string
	}{{true, ""}, {false, "ENOENT"}, {true, ""}, {false, "ECONNREFUSED"}, {false, "EINVAL"}}
	for i, w := range want {
		if p := r.Paths[i]; p.OK != w.ok || p.Errno != w.errno {
			t.Errorf("connect %s: %+v, want ok=%v errno=%q", p.Target, p, w.ok, w.errno)
		}
	}
}

// The full report lists the probe's environment by name and finds a needle
// in its own environ (the control of the search) without printing it.
func TestReportKeepsValuesOut(t *testing.T) {
	const canary = "canary-77c3e9"
	r, out := runProbe(t, []string{"CROW_TEST_SECRET=" + canary, "PROBE_NEEDLES=" + canary}, "report")
	if bytes.Contains(out, []byte(canary)) {
		t.Fatalf("the report prints a value: %s", out)
	}
	if !slices.Equal(r.EnvNames, []string{"CROW_TEST_SECRET", "PROBE_NEEDLES"}) {
		t.Errorf("EnvNames = %q", r.EnvNames)
	}
	var self bool
	for _, h := range r.Needles {
		if h.PID == r.PID && h.Where == "environ" && h.Self {
			self = true
		}
	}
	if !self {
		t.Errorf("needle not found in the probe's own environ: %+v", r.Needles)
	}
	me, ok := r.Process(r.PID)
	if !ok || !me.IsSelf || !me.Environ.OK || !me.MemOpenRW.OK {
		t.Errorf("own process entry: %+v", me)
	}
	if len(r.Syscalls) < 50 {
		t.Errorf("only %d attempts in the report", len(r.Syscalls))
	}
	for _, s := range r.Syscalls {
		if s.Outcome() == "failed" {
			t.Errorf("attempt %s could not run: %s", s.Name, s.Failure)
		}
		if s.Control && s.Outcome() != "ok" && s.Outcome() != "EBADF" {
			t.Errorf("control %s outside any wall: %s", s.Name, s.Outcome())
		}
	}
	if len(r.Errors) > 0 {
		t.Errorf("errors: %v", r.Errors)
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{{"bogus"}, {"read"}, {"report", "extra"}, {"__try"}, {"__try", "no-such-attempt"}} {
		err := exec.Command(probeBin, args...).Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("probe %q: %v, want exit status 2", args, err)
		}
	}
	if err := exec.Command(probeBin, "help").Run(); err != nil {
		t.Errorf("probe help: %v", err)
	}
}

// The probe as a fake add-on: initialize, tools/list, tools/call through the
// official SDK's client.
func TestMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "probe-test", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(probeBin, "mcp")}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer session.Close()

	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "probe" {
		t.Fatalf("tools: %+v", tools.Tools)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "probe", Arguments: map[string]any{"read": []string{path}}})
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("result: %+v", res)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T", res.Content[0])
	}
	r, err := report.Parse([]byte(text.Text))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Paths) != 1 || !r.Paths[0].OK || r.Paths[0].Bytes != 5 {
		t.Errorf("paths: %+v", r.Paths)
	}
	if len(r.Syscalls) == 0 || len(r.Processes) == 0 {
		t.Error("the tool's report is not the full report")
	}
}
