// Package splice copies a pair of connections both ways until both
// directions end: the one copy loop behind every tunnel the relay and the
// in-wall entry carry (the proxy, the listed-port forwards, the doors).
package splice

import (
	"io"
	"net"
	"sync"
)

// bufSize is the copy buffer for a pair the kernel cannot splice, large
// enough that a bulk transfer costs few system calls. A direction holds
// one from the pool for as long as it lasts; the relay's and the entry's
// pairs are all spliced, so they take none.
const bufSize = 256 << 10

var bufs = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// Conns copies bytes from a to b and from b to a, unchanged, until both
// directions end, and closes both before it returns.
//
// A clean end of one direction (EOF from its source) is passed on as a
// half-close of the other side's write half, so a protocol that shuts
// down one way (send the request, shut the write half, read the answer)
// still works. An error in either direction, or a destination that cannot
// be half-closed, closes both at once, which ends the other direction too:
// a tunnel never lingers half broken.
//
// Callers pass the concrete connections (*net.TCPConn, *net.UnixConn), not
// wrappers: then Go's io.Copy moves the bytes with splice(2) without
// copying them through user space (TCP from TCP or from a stream unix
// socket, and TCP to a stream unix socket).
func Conns(a, b net.Conn) {
	var once sync.Once
	closeBoth := func() {
		once.Do(func() {
			_ = a.Close()
			_ = b.Close()
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		oneWay(b, a, closeBoth)
	}()
	// The other direction runs on the caller's goroutine.
	oneWay(a, b, closeBoth)
	<-done
	closeBoth()
}

// oneWay copies src to dst and passes the end on.
func oneWay(dst, src net.Conn, closeBoth func()) {
	if _, err := copyConn(dst, src); err != nil {
		closeBoth()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		return
	}
	closeBoth()
}

// copyConn lets io.Copy splice a pair the kernel can splice, and copies
// any other pair through a pooled buffer. The wrappers hide ReadFrom and
// WriteTo, which for other pairs would copy through a small buffer of
// their own.
func copyConn(dst, src net.Conn) (int64, error) {
	if kernelSplices(dst, src) {
		return io.Copy(dst, src)
	}
	bp := bufs.Get().(*[]byte)
	defer bufs.Put(bp)
	return io.CopyBuffer(writerOnly{dst}, readerOnly{src}, *bp)
}

// kernelSplices says whether Go's net package moves src to dst with
// splice(2) (Go 1.26, Linux: TCPConn.ReadFrom from a TCP or stream unix
// connection, TCPConn.WriteTo into a stream unix connection). A unix
// connection of another type is let through here and copied by Go's
// fallback; that is slower, never wrong.
func kernelSplices(dst, src net.Conn) bool {
	switch dst.(type) {
	case *net.TCPConn:
		switch src.(type) {
		case *net.TCPConn, *net.UnixConn:
			return true
		}
	case *net.UnixConn:
		_, ok := src.(*net.TCPConn)
		return ok
	}
	return false
}

type writerOnly struct{ io.Writer }

type readerOnly struct{ io.Reader }
