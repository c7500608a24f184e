// Package throughput times bulk transfers for the benchmarks that set a
// walled way out beside a direct loopback connection: the same bytes, to
// the same sink, taking turns, reported as two rates and their ratio.
package throughput

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/addonwall/addonwall/internal/loopserver"
)

// DefaultBytes is what one timed transfer moves unless
// ADDONWALL_BENCH_BYTES says otherwise: 1 GiB, the figure.
const DefaultBytes = 1 << 30

// chunk is how much a sender writes and the sink reads at a time, as a
// bulk sender and receiver would. A sink that read in small pieces would
// slow the direct transfer most and flatter the ratio.
const chunk = 256 << 10

// Bytes is how much one timed transfer moves: DefaultBytes, or
// ADDONWALL_BENCH_BYTES (67108864 for a quick 64 MiB look).
func Bytes(tb testing.TB) int64 {
	n, err := parseBytes(os.Getenv("ADDONWALL_BENCH_BYTES"))
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

func parseBytes(s string) (int64, error) {
	if s == "" {
		return DefaultBytes, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("ADDONWALL_BENCH_BYTES=%q is not a positive byte count", s)
	}
	return n, nil
}

// Sink listens on loopback until the test ends and returns its address.
// It reads each connection to the sender's half-close, then answers one
// byte, so a transfer is timed until the last byte has arrived.
func Sink(tb testing.TB) string {
	return loopserver.Start(tb, func(c net.Conn) {
		buf := make([]byte, chunk)
		for {
			if _, err := c.Read(buf); err != nil {
				break
			}
		}
		_, _ = c.Write([]byte{1})
	})
}

// Push sends n bytes on c, shuts c's write half, waits for the sink's
// answer and closes c. It returns the time from the first byte to the
// answer.
func Push(tb testing.TB, c net.Conn, n int64) time.Duration {
	buf := make([]byte, chunk)
	start := time.Now()
	for left := n; left > 0; {
		w, err := c.Write(buf[:min(int64(len(buf)), left)])
		if err != nil {
			tb.Fatal(err)
		}
		left -= int64(w)
	}
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		tb.Fatalf("a %T cannot shut its write half, so the sink would never answer", c)
	}
	if err := cw.CloseWrite(); err != nil {
		tb.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		tb.Fatalf("waiting for the sink's answer: %v", err)
	}
	d := time.Since(start)
	_ = c.Close()
	return d
}

// Compare moves Bytes(b) to the sink b.N times each way, taking turns
// (direct, other, direct, other ...) so a noisy neighbour on a small
// machine slows both alike, and reports "direct-MB/s", name+"-MB/s" and
// name+"/direct". Each dial opens a fresh connection that ends at the
// sink. One small untimed turn of each comes first, so neither pays for
// the first connection's setup.
func Compare(b *testing.B, name string, direct, other func() net.Conn) {
	n := Bytes(b)
	Push(b, direct(), 1<<20)
	Push(b, other(), 1<<20)
	var viaOther, viaDirect time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		viaDirect += Push(b, direct(), n)
		viaOther += Push(b, other(), n)
	}
	b.StopTimer()
	mb := float64(n) * float64(b.N) / 1e6
	otherRate, directRate := mb/viaOther.Seconds(), mb/viaDirect.Seconds()
	b.ReportMetric(otherRate, name+"-MB/s")
	b.ReportMetric(directRate, "direct-MB/s")
	b.ReportMetric(otherRate/directRate, name+"/direct")
	b.ReportMetric(float64(n), "bytes/op")
}
