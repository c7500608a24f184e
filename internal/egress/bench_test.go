package egress

import (
	"context"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// benchBytes is how much each throughput iteration moves: 64 MiB, or
// ADDONWALL_BENCH_BYTES (e.g. 1073741824 for the 1 GiB figure).
func benchBytes(b *testing.B) int64 {
	if s := os.Getenv("ADDONWALL_BENCH_BYTES"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("ADDONWALL_BENCH_BYTES=%q is not a positive byte count", s)
		}
		return n
	}
	return 64 << 20
}

// sinkServer reads everything until the client's half-close, then answers
// one byte, so a transfer is timed end to end.
func sinkServer(b *testing.B) string {
	return tcpServer(b, func(c net.Conn) {
		_, _ = io.Copy(io.Discard, c)
		_, _ = c.Write([]byte{1})
	})
}

func pushThrough(b *testing.B, c net.Conn, n int64, buf []byte) time.Duration {
	start := time.Now()
	for left := n; left > 0; {
		chunk := buf
		if int64(len(chunk)) > left {
			chunk = chunk[:left]
		}
		w, err := c.Write(chunk)
		if err != nil {
			b.Fatal(err)
		}
		left -= int64(w)
	}
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		b.Fatal(err)
	}
	ack := make([]byte, 1)
	if _, err := io.ReadFull(c, ack); err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	_ = c.Close()
	return d
}

// BenchmarkRelayThroughput moves the same bytes through the relay to a
// loopback server and straight to it, and reports both rates and their
// ratio.
func BenchmarkRelayThroughput(b *testing.B) {
	n := benchBytes(b)
	sink := sinkServer(b)
	f := startRelay(b, Config{Rules: Rules{Internet: true}})
	f.dialer.route("93.184.215.14:443", sink)
	buf := make([]byte, 256<<10)
	var viaRelay, direct time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := DialRelay(context.Background(), f.relay.SocketPath(), "example.com:443")
		if err != nil {
			b.Fatal(err)
		}
		viaRelay += pushThrough(b, c, n, buf)
		d, err := net.Dial("tcp", sink)
		if err != nil {
			b.Fatal(err)
		}
		direct += pushThrough(b, d, n, buf)
	}
	b.StopTimer()
	mb := float64(n) * float64(b.N) / 1e6
	relayRate, directRate := mb/viaRelay.Seconds(), mb/direct.Seconds()
	b.ReportMetric(relayRate, "relay-MB/s")
	b.ReportMetric(directRate, "direct-MB/s")
	b.ReportMetric(relayRate/directRate, "relay/direct")
	b.ReportMetric(float64(n), "bytes/op")
}

// BenchmarkRelayConnectLatency times one CONNECT from the client's dial to
// the 200: the strict parse, the host's own addresses read from the
// kernel, the policy, the (injected, instant) lookup and the loopback
// dial. A real resolver adds its own round trip on top.
func BenchmarkRelayConnectLatency(b *testing.B) {
	server := tcpServer(b, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	f := startRelay(b, Config{Rules: Rules{Internet: true}, OwnNetwork: GatherOwnNetwork})
	f.dialer.route("93.184.215.14:443", server)
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		c, err := DialRelay(context.Background(), f.relay.SocketPath(), "example.com:443")
		if err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
		_ = c.Close()
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(times[len(times)*95/100].Nanoseconds()), "p95-ns")
}
