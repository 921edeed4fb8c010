package shaper

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// scanLines calls f with each significant line of r and its 1-based line
// number: surrounding white space (and a CR) trimmed, blank lines and lines
// starting with '#' skipped. It stops at the first error.
func scanLines(r io.Reader, f func(line int, text string) error) error {
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		if err := f(line, text); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", line+1, err)
	}
	return nil
}
