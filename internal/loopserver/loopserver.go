// Package loopserver is the loopback TCP server of tests and benchmarks:
// it runs a handler for each connection, on its own goroutine, until the
// test ends.
package loopserver

import (
	"net"
	"testing"
)

// Start listens on 127.0.0.1 on a free port, serves each connection with
// handle (closing it when handle returns) until tb ends, and returns the
// "127.0.0.1:port" address.
func Start(tb testing.TB, handle func(net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}
