// Package readlimit reads a whole file no larger than a limit. pi2hop
// reads its own state (leases, a share's wiring) back from files it wrote
// in a root-only directory; a file that somehow grew, or a device put in
// its place, must end in an error that names the limit, not in a process
// out of memory.
package readlimit

import (
	"fmt"
	"io"
	"os"
)

// ReadFile returns the contents of path if it holds at most max bytes,
// else an error naming the limit. It reads at most max+1 bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: larger than %d bytes, the limit for this file", path, max)
	}
	return b, nil
}
