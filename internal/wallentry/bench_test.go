package wallentry

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/addonwall/addonwall/internal/egress"
)

// The benchmarks time the add-on's way out as the wall builds it: the
// entry's proxy on loopback, the relay on its unix socket with the real
// policy and the host's real addresses, a loopback target. Only the
// namespace boundary is missing, which a loopback connection crosses
// without copying.

// benchBytes is how much one transfer moves: 64 MiB, or
// ADDONWALL_BENCH_BYTES (1073741824 for the 1 GiB figure).
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

// benchSink reads everything until the client's half-close, then answers
// one byte, so a transfer is timed end to end.
func benchSink(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
				_, _ = c.Write([]byte{1})
			}()
		}
	}()
	return ln.Addr().String()
}

// benchWall is an entry in front of a relay whose internet reaches sink.
func benchWall(b *testing.B, sink string) string {
	r := newRelay(b, egress.Config{
		Rules:      egress.Rules{Internet: true},
		Resolver:   fixedDNS{"example.com": {netip.MustParseAddr("93.184.215.14")}},
		Dialer:     loopDialer{"93.184.215.14:443": sink},
		OwnNetwork: egress.GatherOwnNetwork,
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

func push(b *testing.B, c net.Conn, n int64, buf []byte) time.Duration {
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
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		b.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	_ = c.Close()
	return d
}

// BenchmarkEntryTransfer moves the same bytes from a client of the entry's
// proxy through the relay to a loopback server, and straight to it, and
// reports both rates and their ratio.
func BenchmarkEntryTransfer(b *testing.B) {
	n := benchBytes(b)
	sink := benchSink(b)
	proxy := benchWall(b, sink)
	buf := make([]byte, 256<<10)
	var walled, direct time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		walled += push(b, proxyConnect(b, proxy), n, buf)
		d, err := net.Dial("tcp", sink)
		if err != nil {
			b.Fatal(err)
		}
		direct += push(b, d, n, buf)
	}
	b.StopTimer()
	mb := float64(n) * float64(b.N) / 1e6
	wr, dr := mb/walled.Seconds(), mb/direct.Seconds()
	b.ReportMetric(wr, "walled-MB/s")
	b.ReportMetric(dr, "direct-MB/s")
	b.ReportMetric(wr/dr, "walled/direct")
	b.ReportMetric(float64(n), "bytes/op")
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
	walled := make([]time.Duration, 0, b.N)
	direct := make([]time.Duration, 0, b.N)
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
	slices.Sort(walled)
	slices.Sort(direct)
	p := func(ts []time.Duration, q int) float64 { return float64(ts[len(ts)*q/100].Microseconds()) }
	b.ReportMetric(p(walled, 50), "walled-p50-µs")
	b.ReportMetric(p(walled, 95), "walled-p95-µs")
	b.ReportMetric(p(direct, 50), "direct-p50-µs")
	b.ReportMetric(p(direct, 95), "direct-p95-µs")
	b.ReportMetric(p(walled, 50)-p(direct, 50), "added-p50-µs")
}
