// Command tinylisten is the listener-owner check's test service: it
// listens on ADDR, prints "LISTEN host:port" and closes every connection
// it accepts, until it is killed. Arguments after ADDR are ignored (tests
// use them to shape argv). Started as root, -sockuid makes the socket
// another user's and -uid then turns the process into a third user, so
// the socket's owner holds no process.
//
//	tinylisten [-reuseport] [-sockuid N -uid M] ADDR [ignored...]
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"syscall"
)

// soReusePort is SO_REUSEPORT on Linux; package syscall does not name it.
const soReusePort = 0xf

func main() {
	reuse := flag.Bool("reuseport", false, "set SO_REUSEPORT, so two services can share the port")
	sockUID := flag.Int("sockuid", -1, "the effective uid to create the socket as")
	uid := flag.Int("uid", -1, "the uid to become once the socket listens")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: tinylisten [-reuseport] [-sockuid N -uid M] ADDR [ignored...]")
		os.Exit(2)
	}
	if *sockUID >= 0 {
		must(syscall.Setresuid(-1, *sockUID, -1))
	}
	lc := net.ListenConfig{}
	if *reuse {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, soReusePort, 1)
			})
			if err != nil {
				return err
			}
			return serr
		}
	}
	l, err := lc.Listen(context.Background(), "tcp", flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *uid >= 0 {
		must(syscall.Setresuid(-1, 0, -1))
		must(syscall.Setresuid(*uid, *uid, *uid))
	}
	fmt.Printf("LISTEN %s\n", l.Addr())
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		c.Close()
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
