package loopserver

import (
	"bufio"
	"fmt"
	"net"
	"testing"
)

func TestStartServesEachConnectionUntilTheTestEnds(t *testing.T) {
	var addr string
	t.Run("serving", func(t *testing.T) {
		addr = Start(t, func(c net.Conn) {
			line, _ := bufio.NewReader(c).ReadString('\n')
			fmt.Fprintf(c, "got %s", line)
		})
		for _, msg := range []string{"one\n", "two\n"} {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprint(c, msg)
			reply, err := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if err != nil || reply != "got "+msg {
				t.Fatalf("reply %q (%v), want %q", reply, err, "got "+msg)
			}
		}
	})
	// The subtest has ended, so its server has stopped listening.
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("%s still accepts after its test ended", addr)
	}
}
