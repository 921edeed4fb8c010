package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// UsageError is a mistake in the command line: printed with a hint
// naming the help of the command (Cmd, its path), exit 2.
type UsageError struct{ Msg, Cmd string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef is a UsageError; Run names the command it came from.
func Usagef(format string, a ...any) error { return &UsageError{Msg: fmt.Sprintf(format, a...)} }

// inCommand names c in a usage error that names no command yet, so its
// hint points at c's help (help's own errors point at the command list).
func inCommand(err error, c *Command) error {
	var ue *UsageError
	if errors.As(err, &ue) && ue.Cmd == "" && !(c.Name == "help" && c.parent == nil) {
		ue.Cmd = c.Path()
	}
	return err
}

// ExitError carries a child's exit status through.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// PlatformError is a command this system cannot run: printed as is, one
// line, exit 2.
type PlatformError struct{ Msg string }

func (e *PlatformError) Error() string { return e.Msg }

// ExitCode prints err (if any) as program name does and maps it to the
// process exit status.
func ExitCode(name string, err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	var pe *PlatformError
	if errors.As(err, &pe) {
		fmt.Fprintln(stderr, pe.Msg)
		return 2
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	var ue *UsageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "Run '%s' for usage.\n", strings.TrimSpace(name+" help "+ue.Cmd))
		return 2
	}
	return 1
}
