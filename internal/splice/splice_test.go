package splice

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// Every test runs Conns between real sockets on loopback:
//
//	x ──pair── a ⇄ Conns ⇄ b ──pair── y
//
// x stands for the client, y for the server.

// liveness bounds how long a test waits for something that must happen;
// it is never a figure the test asserts.
const liveness = 20 * time.Second

// pairFunc returns two connected ends: the first is dialled, the second
// accepted.
type pairFunc func(t *testing.T) (net.Conn, net.Conn)

func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return dialAccept(t, ln, "tcp", ln.Addr().String())
}

func unixPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return dialAccept(t, ln, "unix", path)
}

func dialAccept(t *testing.T, ln net.Listener, network, addr string) (net.Conn, net.Conn) {
	t.Helper()
	d, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); acc.Close() })
	return d, acc
}

// noHalfClose hides CloseWrite: a real connection seen through a type that
// cannot shut one way, which no socket here offers.
type noHalfClose struct{ net.Conn }

// chain starts Conns between x's far end and y's far end and returns x, y
// and a channel closed when Conns returns. wrapB, if set, wraps b.
func chain(t *testing.T, front, back pairFunc, wrapB func(net.Conn) net.Conn) (x, y net.Conn, done chan struct{}) {
	t.Helper()
	x, a := front(t)
	b, y := back(t)
	if wrapB != nil {
		b = wrapB(b)
	}
	done = make(chan struct{})
	go func() {
		defer close(done)
		Conns(a, b)
	}()
	t.Cleanup(func() {
		x.Close()
		y.Close()
		<-done
	})
	return x, y, done
}

func closeWrite(t *testing.T, c net.Conn) {
	t.Helper()
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, c net.Conn) ([]byte, error) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(liveness))
	return io.ReadAll(c)
}

func waitDone(t *testing.T, done chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(liveness):
		t.Fatalf("Conns did not return after %s", what)
	}
}

// The client sends its question and shuts its write half; the server
// reads to the end, then answers. The answer arrives only because the end
// was passed on as a half-close and the other direction kept running.
func TestHalfCloseIsPassedOn(t *testing.T) {
	for _, tc := range []struct {
		name       string
		wrapB      func(net.Conn) net.Conn
		wantAnswer bool
	}{
		{"a socket passes the end on and the answer arrives", nil, true},
		// The refusal beside it: the same exchange through a side that
		// cannot half-close is ended outright, so no answer arrives.
		{"a side that cannot half-close ends both, and no answer arrives", func(c net.Conn) net.Conn { return noHalfClose{c} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, y, done := chain(t, tcpPair, unixPair, tc.wrapB)
			if _, err := io.WriteString(x, "question"); err != nil {
				t.Fatal(err)
			}
			closeWrite(t, x)
			got, err := readAll(t, y)
			if err != nil || string(got) != "question" {
				t.Fatalf("the server read %q, %v; want the question and a clean end", got, err)
			}
			// The server's write may land in a socket buffer nobody
			// reads any more; only what the client gets counts.
			_, _ = io.WriteString(y, "answer")
			closeWrite(t, y)
			answer, _ := readAll(t, x)
			if tc.wantAnswer && string(answer) != "answer" {
				t.Fatalf("the client read %q, want the answer", answer)
			}
			if !tc.wantAnswer && len(answer) != 0 {
				t.Fatalf("the client read %q through a side that cannot half-close, want nothing", answer)
			}
			waitDone(t, done, "both directions ended")
		})
	}
}

// A reset from the server is an error on one direction: Conns ends both,
// and the client sees its connection end although it never shut its own
// write half. Beside it, the server's clean half-close leaves the
// client's direction running.
func TestErrorEndsBoth(t *testing.T) {
	t.Run("a clean end from the server leaves the client's direction open", func(t *testing.T) {
		x, y, done := chain(t, tcpPair, unixPair, nil)
		closeWrite(t, y)
		if got, err := readAll(t, x); err != nil || len(got) != 0 {
			t.Fatalf("the client read %q, %v; want a clean end", got, err)
		}
		if _, err := io.WriteString(x, "still here"); err != nil {
			t.Fatal(err)
		}
		closeWrite(t, x)
		if got, err := readAll(t, y); err != nil || string(got) != "still here" {
			t.Fatalf("after its own half-close the server read %q, %v; want the client's bytes", got, err)
		}
		waitDone(t, done, "both directions ended cleanly")
	})
	t.Run("a reset from the server ends the client's connection too", func(t *testing.T) {
		// The server side is TCP here: a zero linger makes Close send a
		// reset, a real error on the relay's read.
		x, y, done := chain(t, unixPair, tcpPair, nil)
		if _, err := io.WriteString(x, "hello"); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 5)
		_ = y.SetReadDeadline(time.Now().Add(liveness))
		if _, err := io.ReadFull(y, buf); err != nil {
			t.Fatal(err)
		}
		if err := y.(*net.TCPConn).SetLinger(0); err != nil {
			t.Fatal(err)
		}
		_ = y.Close()
		waitDone(t, done, "the server's reset, with the client's write half still open")
		if got, err := readAll(t, x); len(got) != 0 || err != nil {
			t.Fatalf("the client read %q, %v; want its connection ended", got, err)
		}
	})
	t.Run("closing one side from outside ends both", func(t *testing.T) {
		// This is how the relay and the entry end their tunnels at
		// shutdown: they close the connections under Conns.
		x, a := tcpPair(t)
		b, y := unixPair(t)
		done := make(chan struct{})
		go func() {
			defer close(done)
			Conns(a, b)
		}()
		_ = a.Close()
		waitDone(t, done, "one side was closed")
		if got, err := readAll(t, y); len(got) != 0 || err != nil {
			t.Fatalf("the server read %q, %v; want its connection ended", got, err)
		}
		_ = x.Close()
	})
}

// Bytes cross unchanged both ways at once, through a pair the kernel
// splices and through one copied in user space.
func TestBytesArriveUnchanged(t *testing.T) {
	const size = 32 << 20
	for _, tc := range []struct {
		name        string
		front, back pairFunc
	}{
		{"tcp to unix (spliced)", tcpPair, unixPair},
		{"tcp to tcp (spliced)", tcpPair, tcpPair},
		{"unix to unix (copied through the pooled buffer)", unixPair, unixPair},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, down := random(t, size), random(t, size)
			x, y, done := chain(t, tc.front, tc.back, nil)
			type result struct {
				sum [32]byte
				n   int64
				err error
			}
			exchange := func(c net.Conn, send []byte) chan result {
				ch := make(chan result, 1)
				go func() {
					h := sha256.New()
					rd := make(chan result, 1)
					go func() {
						_ = c.SetReadDeadline(time.Now().Add(liveness))
						n, err := io.Copy(h, c)
						var r result
						copy(r.sum[:], h.Sum(nil))
						r.n, r.err = n, err
						rd <- r
					}()
					if _, err := c.Write(send); err != nil {
						ch <- result{err: err}
						return
					}
					if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
						ch <- result{err: err}
						return
					}
					ch <- <-rd
				}()
				return ch
			}
			xr, yr := exchange(x, up), exchange(y, down)
			gotX, gotY := <-xr, <-yr
			if gotX.err != nil || gotY.err != nil {
				t.Fatalf("exchange: client %v, server %v", gotX.err, gotY.err)
			}
			if gotY.n != size || gotY.sum != sha256.Sum256(up) {
				t.Errorf("the server got %d bytes hashing %x, want the client's %d hashing %x", gotY.n, gotY.sum, size, sha256.Sum256(up))
			}
			if gotX.n != size || gotX.sum != sha256.Sum256(down) {
				t.Errorf("the client got %d bytes hashing %x, want the server's %d hashing %x", gotX.n, gotX.sum, size, sha256.Sum256(down))
			}
			// The hashes differ between the two payloads, so a
			// crossed-over stream could not pass the checks above.
			if bytes.Equal(up[:64], down[:64]) {
				t.Fatal("the two random payloads start alike; the check above would not tell them apart")
			}
			waitDone(t, done, "both directions ended")
		})
	}
}

func random(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// The fast path is taken only for the concrete socket types Go splices;
// anything wrapped goes through the buffer, which is slower but the same
// bytes.
func TestKernelSplices(t *testing.T) {
	tc1, tc2 := tcpPair(t)
	u1, _ := unixPair(t)
	wrapped := noHalfClose{tc2}
	for _, c := range []struct {
		name     string
		dst, src net.Conn
		want     bool
	}{
		{"tcp from tcp", tc1, tc2, true},
		{"tcp from unix", tc1, u1, true},
		{"unix from tcp", u1, tc1, true},
		{"unix from unix", u1, u1, false},
		{"tcp from a wrapped tcp", tc1, wrapped, false},
		{"a wrapped tcp from tcp", wrapped, tc1, false},
	} {
		if got := kernelSplices(c.dst, c.src); got != c.want {
			t.Errorf("kernelSplices(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}
