package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/addonwall/addonwall/test/probe/report"
)

// readCap bounds how much of a file the probe reads: enough to find a
// needle in a credential file, not enough to stall on /dev/zero.
const readCap = 1 << 20

func readPath(path string, needles []string) (report.Path, []report.NeedleHit) {
	p := report.Path{Op: "read", Target: path}
	f, err := os.Open(path)
	if err != nil {
		p.Access = access(err)
		return p, nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, readCap))
	p.Access, p.Bytes = access(err), len(b)
	return p, findNeedles(needles, b, 0, "read:"+path, false)
}

// writePath appends a line, so a test that points it at a real file does
// not lose the file's contents.
func writePath(path string) report.Path {
	p := report.Path{Op: "write", Target: path}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		p.Access = access(err)
		return p
	}
	n, err := f.Write([]byte("addonwall-probe\n"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	p.Access, p.Bytes = access(err), n
	return p
}

// connectTarget dials unix:PATH or tcp:HOST:PORT and hangs up at once.
func connectTarget(target string) report.Path {
	p := report.Path{Op: "connect", Target: target}
	network, addr, ok := strings.Cut(target, ":")
	if !ok || addr == "" || (network != "unix" && network != "tcp") {
		p.Errno = "EINVAL"
		p.Detail = fmt.Sprintf("target %q is neither unix:PATH nor tcp:HOST:PORT", target)
		return p
	}
	c, err := net.DialTimeout(network, addr, 3*time.Second)
	if err != nil {
		p.Access = access(err)
		var nerr net.Error
		if errors.As(err, &nerr) && nerr.Timeout() {
			p.Detail = "timeout"
		}
		return p
	}
	c.Close()
	p.OK = true
	return p
}
