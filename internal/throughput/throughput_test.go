package throughput

import (
	"errors"
	"net"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"", DefaultBytes, false},
		{"67108864", 64 << 20, false},
		{"1", 1, false},
		{"0", 0, true},
		{"-5", 0, true},
		{"64MiB", 0, true},
		{"1e9", 0, true},
	} {
		got, err := parseBytes(c.in)
		if (err != nil) != c.wantErr || got != c.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.wantErr)
		}
	}
}

// Push returns (rather than failing the test) only once the sink has
// answered, which it does after reading to the half-close; and it leaves
// the connection closed.
func TestPushReachesTheSink(t *testing.T) {
	c, err := net.Dial("tcp", Sink(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(nil); err != nil {
		t.Fatalf("before Push, the connection is open: %v", err)
	}
	Push(t, c, 3<<20+17)
	if _, err := c.Write([]byte{0}); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("after Push, a write gave %v, want net.ErrClosed", err)
	}
}
