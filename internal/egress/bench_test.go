package egress

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/addonwall/addonwall/internal/latency"
	"github.com/addonwall/addonwall/internal/loopserver"
	"github.com/addonwall/addonwall/internal/throughput"
)

// BenchmarkRelayThroughput moves the same bytes (1 GiB, or
// ADDONWALL_BENCH_BYTES) through the relay to a loopback sink and straight
// to it, taking turns, and reports both rates and their ratio. The client
// here speaks to the relay's socket itself; BenchmarkEntryTransfer in
// internal/wallentry puts the entry's proxy in front.
func BenchmarkRelayThroughput(b *testing.B) {
	sink := throughput.Sink(b)
	f := startRelay(b, Config{Rules: Rules{Internet: true}})
	f.dialer.route("93.184.215.14:443", sink)
	throughput.Compare(b, "relay",
		func() net.Conn {
			d, err := net.Dial("tcp", sink)
			if err != nil {
				b.Fatal(err)
			}
			return d
		},
		func() net.Conn {
			c, err := DialRelay(context.Background(), f.relay.SocketPath(), "example.com:443")
			if err != nil {
				b.Fatal(err)
			}
			return c
		})
}

// BenchmarkRelayConnectLatency times one CONNECT from the client's dial to
// the 200: the strict parse, the host's own addresses read from the
// kernel, the policy, the (injected, instant) lookup and the loopback
// dial. A real resolver adds its own round trip on top.
func BenchmarkRelayConnectLatency(b *testing.B) {
	server := loopserver.Start(b, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	f := startRelay(b, Config{Rules: Rules{Internet: true}, OwnNetwork: GatherOwnNetwork})
	f.dialer.route("93.184.215.14:443", server)
	times := make(latency.Samples, 0, b.N)
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
	b.ReportMetric(float64(times.P50().Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(times.P95().Nanoseconds()), "p95-ns")
}
