package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

const (
	rvFileName = ".resourceversion"
	// rvBlock is how many versions one write of the counter file reserves.
	// Persisting a high-water mark instead of every value keeps a write at
	// one fsync'd rename for the object; a restart skips at most a block,
	// and versions need only grow, not be dense.
	rvBlock = 1000
	// rvCeiling bounds a version read from disk, so a hand-typed huge
	// number cannot wrap the counter.
	rvCeiling = uint64(1) << 62
)

// rvCounter is the store-wide resourceVersion counter. It is used under
// the store's write lock only.
type rvCounter struct {
	path     string
	current  uint64 // last version handed out
	reserved uint64 // every version <= reserved may be in use on disk
	readOnly bool
}

// openRV reads the counter file. A missing file starts at zero; a file
// that does not hold a number is an error, since guessing could hand out
// a version twice.
func openRV(dir string, readOnly bool) (*rvCounter, error) {
	c := &rvCounter{path: filepath.Join(dir, rvFileName), readOnly: readOnly}
	data, err := os.ReadFile(c.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return c, nil
	case err != nil:
		return nil, fmt.Errorf("read the resourceVersion counter: %w", err)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n > rvCeiling {
		return nil, fmt.Errorf("%s does not hold a resourceVersion counter (%q): fix or remove it; the store starts again from the highest version in its files", c.path, strings.TrimSpace(string(data)))
	}
	c.current, c.reserved = n, n
	return c, nil
}

// observe raises the counter past a version found in a file, so that a
// lost or older counter file never hands out a version already on disk.
func (c *rvCounter) observe(rv uint64) {
	if rv > c.current {
		c.current = rv
	}
}

// next hands out the next version, persisting a new reservation first
// whenever the current one is used up.
func (c *rvCounter) next() (uint64, error) {
	n := c.current + 1
	// A read-only view numbers what it loads in memory only; it never
	// writes, so its versions never reach a file.
	if n > c.reserved && !c.readOnly {
		mark := n + rvBlock - 1
		if err := writeFileAtomic(c.path, []byte(strconv.FormatUint(mark, 10)+"\n"), nil); err != nil {
			return 0, fmt.Errorf("persist the resourceVersion counter: %w", err)
		}
		c.reserved = mark
	}
	c.current = n
	return n, nil
}

func parseRV(s string) (uint64, bool) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 || n > rvCeiling {
		return 0, false
	}
	return n, true
}

func formatRV(n uint64) string { return strconv.FormatUint(n, 10) }
