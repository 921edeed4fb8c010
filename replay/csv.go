package replay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/pi2hop/pi2hop/aqm"
)

// CSV trace columns. The header names them; their order is free.
const (
	colTime = iota
	colBytes
	colECN
	colFlow
	colDSCP
	numCols
)

var colNames = [numCols]string{"time_ns", "bytes", "ecn", "flow", "dscp"}

// CSVSource reads a packet trace in CSV: a header naming the columns
// time_ns, bytes, ecn and optionally flow and dscp, then one packet per
// row. time_ns is the arrival in ns (non-decreasing), bytes the IP length
// (1..65535), ecn the ECN field value 0..3 (0 Not-ECT, 1 ECT(1), 2 ECT(0),
// 3 CE), flow an id 0..2^32-1 (default 0), dscp the DSCP 0..63 (default
// 0; 45 is NQB). Blank lines and lines starting
// with # are skipped. Fields are plain numbers: no quoting.
type CSVSource struct {
	r     *bufio.Reader
	name  string // for errors: the file name, or "stdin"
	line  int
	pos   [numCols]int // column index of each field, -1 if absent
	ncols int
	last  int64
}

// NewCSVSource reads a CSV trace from r; name (a file name, or "stdin")
// prefixes errors: trace.csv:17: ...
func NewCSVSource(r io.Reader, name string) *CSVSource {
	return &CSVSource{r: bufio.NewReaderSize(r, 64<<10), name: name, ncols: -1}
}

// errorf prefixes an error with the file and line: trace.csv:17: ...
func (c *CSVSource) errorf(format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s", c.name, c.line, fmt.Sprintf(format, a...))
}

// readLine returns the next line that is neither blank nor a comment,
// without its line ending; nil at the end of the input.
func (c *CSVSource) readLine() ([]byte, error) {
	for {
		b, err := c.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			c.line++
			return nil, c.errorf("line longer than %d bytes", c.r.Size())
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		if len(b) == 0 && err == io.EOF {
			return nil, nil
		}
		c.line++
		b = bytes.TrimSpace(b)
		if len(b) > 0 && b[0] != '#' {
			return b, nil
		}
		if err == io.EOF {
			return nil, nil
		}
	}
}

func (c *CSVSource) readHeader() error {
	b, err := c.readLine()
	if err != nil {
		return err
	}
	if b == nil {
		return fmt.Errorf("%s: empty trace: want a header line time_ns,bytes,ecn[,flow]", c.name)
	}
	for i := range c.pos {
		c.pos[i] = -1
	}
	names := strings.Split(string(b), ",")
	c.ncols = len(names)
	for i, n := range names {
		n = strings.TrimSpace(n)
		col := -1
		for k, want := range colNames {
			if n == want {
				col = k
			}
		}
		switch {
		case col < 0:
			return c.errorf("unknown column %q in the header (want time_ns, bytes, ecn and optionally flow, dscp)", n)
		case c.pos[col] >= 0:
			return c.errorf("column %q appears twice in the header", n)
		}
		c.pos[col] = i
	}
	for k := colTime; k <= colECN; k++ {
		if c.pos[k] < 0 {
			return c.errorf("header %q has no column %q (want time_ns,bytes,ecn[,flow][,dscp])", b, colNames[k])
		}
	}
	return nil
}

// Next implements Source.
func (c *CSVSource) Next(p *Packet) (bool, error) {
	if c.ncols < 0 {
		if err := c.readHeader(); err != nil {
			return false, err
		}
	}
	b, err := c.readLine()
	if err != nil || b == nil {
		return false, err
	}
	var fields [numCols][]byte
	n := 0
	for f := range bytes.SplitSeq(b, []byte{','}) {
		if n < c.ncols {
			for k, pos := range c.pos {
				if pos == n {
					fields[k] = bytes.TrimSpace(f)
				}
			}
		}
		n++
	}
	if n != c.ncols {
		return false, c.errorf("%d fields, want %d as in the header", n, c.ncols)
	}

	t, ok := parseDecimal(fields[colTime], math.MaxInt64)
	if !ok {
		return false, c.errorf("column %q: %q is not a time in ns (a whole number >= 0)", "time_ns", fields[colTime])
	}
	if int64(t) < c.last {
		return false, c.errorf("column %q: %d is before the previous row's %d (times must not decrease)", "time_ns", t, c.last)
	}
	size, ok := parseDecimal(fields[colBytes], 65535)
	if !ok || size == 0 {
		return false, c.errorf("column %q: %q is not a packet size 1..65535", "bytes", fields[colBytes])
	}
	ecn, ok := parseDecimal(fields[colECN], 3)
	if !ok {
		return false, c.errorf("column %q: %q is not an ECN value 0..3 (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE)", "ecn", fields[colECN])
	}
	var flow uint64
	if c.pos[colFlow] >= 0 {
		if flow, ok = parseDecimal(fields[colFlow], math.MaxUint32); !ok {
			return false, c.errorf("column %q: %q is not a flow id 0..4294967295", "flow", fields[colFlow])
		}
	}
	var dscp uint64
	if c.pos[colDSCP] >= 0 {
		if dscp, ok = parseDecimal(fields[colDSCP], 63); !ok {
			return false, c.errorf("column %q: %q is not a DSCP 0..63", "dscp", fields[colDSCP])
		}
	}
	c.last = int64(t)
	*p = Packet{Time: int64(t), Len: int32(size), ECN: aqm.ECN(ecn), Flow: uint32(flow), DSCP: uint8(dscp)}
	return true, nil
}

// parseDecimal reads an unsigned decimal number no larger than max,
// without allocating (strconv wants a string).
func parseDecimal(b []byte, max uint64) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if d > max || n > (max-d)/10 { // n*10+d would exceed max
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
