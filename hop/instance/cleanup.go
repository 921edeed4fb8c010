package instance

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/tun"
)

// leftovers lists, per topology, what an instance of that name makes by
// convention and what outlives its process; Cleanup sweeps them when the
// state file is gone or was cut short. A new topology adds its line here.
var leftovers = []func(name string) []tun.Entry{
	shellLeftovers,
	hop.GatewayLeftovers,
}

// Cleanup undoes what a dead instance left, from its state file, then
// sweeps what instances of that name make by convention. Sysctls can only
// be restored from the record. It says what it does on out.
func Cleanup(name string, out io.Writer) error {
	if err := CheckName(name); err != nil {
		return err
	}
	var entries []tun.Entry
	st, err := ReadState(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(out, "instance %q: no state file %s; removing what its name implies\n", name, StatePath(name))
	case err != nil:
		return err
	case st.PID != os.Getpid() && ProcessAlive(st.PID):
		return fmt.Errorf("instance %q is still running (pid %d): stop it (SIGTERM) instead", name, st.PID)
	default:
		entries = st.Entries
	}
	for i := len(entries) - 1; i >= 0; i-- {
		fmt.Fprintf(out, "undo %s\n", entries[i])
	}
	errs := []error{tun.UndoEntries(entries)}
	for _, l := range leftovers {
		errs = append(errs, tun.UndoEntries(l(name)))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cleanup of %q: %w", name, err)
	}
	os.Remove(SocketPath(name))
	if err := os.Remove(StatePath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
