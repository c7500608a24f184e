package bwrap

import (
	"bytes"
	"os"
	"testing"
)

// stderrCmd writes to stderr twice, then leaves a marker: the marker shows
// the second write did not end the add-on (a copy that stopped at the first
// failed write leaves a pipe nobody reads, and the next write gets SIGPIPE).
var stderrCmd = []string{"-c", `echo one >&2; sleep 0.2; echo two >&2; echo ran > "$HOME/marker"`}

// A wall's stderr is copied through the controller. A destination that
// fails (the client stopped reading) must not break the add-on's stderr nor
// make a clean end look like a failure.
func TestStderrDestinationGoneIsNotAFailure(t *testing.T) {
	bwrapPath := requireWall(t)

	// Positive control: a working destination gets both lines, and the add-on
	// ends cleanly.
	l := newCrow(t)
	var got bytes.Buffer
	c, err := Start(ctxT(t), l.planFor(t, "/bin/sh", stderrCmd, nil), allowAll(), Stdio{Stderr: &got}, WithBwrapPath(bwrapPath))
	if err != nil {
		t.Fatal(err)
	}
	if exit := runToEnd(t, c); exit.Code != 0 || exit.SetupFailed || exit.Signal != "" {
		t.Fatalf("control: exit %+v", exit)
	}
	if got.String() != "one\ntwo\n" || !exists(l.folder+"/marker") {
		t.Fatalf("control: stderr %q, marker %v", got.String(), exists(l.folder+"/marker"))
	}

	// The same add-on with a stderr whose reader is gone: every write to it
	// fails with EPIPE.
	l2 := newCrow(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	c, err = Start(ctxT(t), l2.planFor(t, "/bin/sh", stderrCmd, nil), allowAll(), Stdio{Stderr: w}, WithBwrapPath(bwrapPath))
	if err != nil {
		t.Fatal(err)
	}
	exit, err := c.Wait()
	if err != nil || exit.Code != 0 || exit.SetupFailed || exit.Signal != "" {
		t.Fatalf("a failing stderr destination: exit %+v, error %v; want a clean end", exit, err)
	}
	if !exists(l2.folder + "/marker") {
		t.Fatal("the add-on did not get past its second write to stderr")
	}
}
