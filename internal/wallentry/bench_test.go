package wallentry

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/addonwall/addonwall/internal/egress"
	"github.com/addonwall/addonwall/internal/latency"
	"github.com/addonwall/addonwall/internal/throughput"
)

// The benchmarks time the add-on's way out as the wall builds it: the
// entry's proxy on loopback, the relay on its unix socket with the real
// policy and the host's real addresses, a loopback target. Only the
// namespace boundary is missing, which a loopback connection crosses
// without copying.

// benchWall is an entry in front of a relay whose internet reaches sink.
// As in the e2e tests, only the resolver, the dialer (the public address
// mapped to sink) and the listener check (the bench's own sink only) are
// injected; the policy and this host's addresses are the real ones.
func benchWall(b *testing.B, sink string) string {
	sinkAddr := netip.MustParseAddrPort(sink)
	r := newRelay(b, egress.Config{
		Rules:      egress.Rules{Internet: true},
		Resolver:   fixedDNS{"example.com": {netip.MustParseAddr("93.184.215.14")}},
		Dialer:     loopDialer{"93.184.215.14:443": sink},
		OwnNetwork: egress.GatherOwnNetwork,
		ListenerCheck: func(_ context.Context, a netip.AddrPort, _ bool) error {
			if a != sinkAddr {
				return errors.New("not the bench's listener")
			}
			return nil
		},
	})
	l := &ephemeral{}
	startEntry(b, Config{RelaySocket: r.SocketPath(), ProxyPort: DefaultProxyPort}, l)
	return l.addrs["127.0.0.1:39080"]
}

// proxyConnect opens a tunnel through the entry's proxy.
func proxyConnect(b *testing.B, proxy string) net.Conn {
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.WriteString(c, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"); err != nil {
		b.Fatal(err)
	}
	// Read the answer a byte at a time: nothing past it is the answer's.
	br := bufio.NewReaderSize(c, 16)
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 200 Connection established\r\n" {
		b.Fatalf("CONNECT answered %q, %v", line, err)
	}
	if end, err := br.ReadString('\n'); err != nil || end != "\r\n" || br.Buffered() != 0 {
		b.Fatalf("CONNECT answer ends with %q, %v", end, err)
	}
	return c
}

// BenchmarkEntryTransfer moves the same bytes (1 GiB, or
// ADDONWALL_BENCH_BYTES) from a client of the entry's proxy through the
// relay to a loopback sink, and straight to it, taking turns, and reports
// both rates and their ratio: the figure.
func BenchmarkEntryTransfer(b *testing.B) {
	sink := throughput.Sink(b)
	proxy := benchWall(b, sink)
	throughput.Compare(b, "walled",
		func() net.Conn {
			d, err := net.Dial("tcp", sink)
			if err != nil {
				b.Fatal(err)
			}
			return d
		},
		func() net.Conn { return proxyConnect(b, proxy) })
}

// BenchmarkEntryConnectLatency times one connection from the client's dial
// of the proxy to the tunnel's first answered byte: the entry, the relay's
// strict parse, this host's own addresses read from the kernel, the policy,
// the (injected, instant) lookup, the loopback dial and one round trip. It
// reports p50 and p95 beside a direct connection's (dial and one round
// trip), and what the wall adds at p50.
func BenchmarkEntryConnectLatency(b *testing.B) {
	target := echoServer(b)
	proxy := benchWall(b, target)
	roundTrip := func(c net.Conn) {
		if _, err := io.WriteString(c, "x\n"); err != nil {
			b.Fatal(err)
		}
		if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
	walled := make(latency.Samples, 0, b.N)
	direct := make(latency.Samples, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		roundTrip(proxyConnect(b, proxy))
		walled = append(walled, time.Since(start))
		start = time.Now()
		d, err := net.Dial("tcp", target)
		if err != nil {
			b.Fatal(err)
		}
		roundTrip(d)
		direct = append(direct, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(latency.Us(walled.P50()), "walled-p50-µs")
	b.ReportMetric(latency.Us(walled.P95()), "walled-p95-µs")
	b.ReportMetric(latency.Us(direct.P50()), "direct-p50-µs")
	b.ReportMetric(latency.Us(direct.P95()), "direct-p95-µs")
	b.ReportMetric(latency.Us(walled.P50()-direct.P50()), "added-p50-µs")
}
