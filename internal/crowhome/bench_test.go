package crowhome

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseAddonsLargest parses an mcp-addons.json just under the
// value limit (7 values an entry, 9 000 entries, about 650 KB): the most
// work a file the reader accepts can ask of it.
func BenchmarkParseAddonsLargest(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("{")
	for i := range 9000 {
		fmt.Fprintf(&sb, `"a%d": {"command": "node", "args": ["x", "y"], "env": {"K": "v"}},`, i)
	}
	sb.WriteString(`"last": {"command": "node"}}`)
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := parseAddons("b.json", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRefuseTooManyValues is the cheapest 4 MiB document that expands
// into the most values ([0,0,0,…]); it is refused at the value limit.
func BenchmarkRefuseTooManyValues(b *testing.B) {
	data := []byte("[" + strings.Repeat("0,", MaxFileSize/2-2) + "0]")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := parseAddons("b.json", data); err == nil {
			b.Fatal("want a refusal")
		}
	}
}

// BenchmarkParseAddonsTypical parses a 100-entry mcp-addons.json, more than
// a real host has.
func BenchmarkParseAddonsTypical(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("{")
	for i := range 100 {
		fmt.Fprintf(&sb, `"a%d": {"command": "node", "args": ["server/index.js"], "env": {"A_URL": "http://127.0.0.1:8600", "A_TOKEN": "t"}, "command_sha256": "%064x"},`, i, i)
	}
	sb.WriteString(`"last": {"command": "node"}}`)
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := parseAddons("b.json", data); err != nil {
			b.Fatal(err)
		}
	}
}
