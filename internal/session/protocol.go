package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The control socket speaks one JSON line each way, then, for a connect,
// the raw MCP stream.

// Ops a client can ask for.
const (
	OpConnect = "connect"
	OpUnwall  = "unwall"
	OpWall    = "wall"
)

// maxRequestLine bounds the request line; nothing legitimate is near it.
const maxRequestLine = 4096

// Request is the first line a client sends.
type Request struct {
	Op string `json:"op"`
	// ID is the add-on, for connect and wall.
	ID string `json:"id,omitempty"`
	// Ref is a Fix-it card's ref, for unwall.
	Ref string `json:"ref,omitempty"`
}

// Reply is the first line the controller answers.
type Reply struct {
	OK bool `json:"ok"`
	// Reason, Word and Message say why a request was refused, or what a
	// choice did.
	Reason  string `json:"reason,omitempty"`
	Word    string `json:"word,omitempty"`
	Message string `json:"message,omitempty"`
	// ID is the add-on an unwall changed.
	ID string `json:"id,omitempty"`
	// Exit is the child's exit code, in the line that ends a session.
	Exit int `json:"exit,omitempty"`
}

// readLine reads one request or reply line without reading past it, so the
// MCP stream that follows is not swallowed by a buffer.
func readLine(r io.Reader, v any) error {
	var line []byte
	var b [1]byte
	for {
		n, err := r.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			line = append(line, b[0])
			if len(line) > maxRequestLine {
				return fmt.Errorf("the control line is longer than %d bytes", maxRequestLine)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("the control connection closed before a whole line: %w", io.ErrUnexpectedEOF)
			}
			return err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the control line is not valid: %w", err)
	}
	return nil
}

func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
