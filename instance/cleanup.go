package instance

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/topology"
)

// leftovers lists, per command, what an instance of that name makes by
// convention and what outlives its process; Cleanup sweeps them when the
// state file is gone. A new topology adds its line here. The gateway's
// policy rules are not named after the instance: they are swept only for
// the interfaces given (see Cleanup).
var leftovers = map[string]func(name string) []netsys.Entry{
	"shell": shellLeftovers,
	"lab":   labLeftovers,
	"share": shareLeftovers,
}

// Cleanup undoes what a dead instance left, from its state file, then
// sweeps what instances of that name make by convention: those of the
// command recorded in the state file, or of every command when there is
// none. A gateway's policy rules (a table and priority fixed by the name,
// input interface LAN or WAN) are swept only for ifaces, so a rule of
// someone else's that happens to share the table and priority stays.
// Shared sysctls are released from the instance's reference, and
// restored only if no other instance holds them. It says what it does on
// out.
//
// All of it happens in the network namespace the instance ran in, as its
// state file records: entered when it is not this process's. When that
// namespace no longer exists, nothing is undone in it or in this one
// (cleanupGone) and the error says where the instance lived.
func Cleanup(name string, ifaces []string, out io.Writer) error {
	return CleanupAs("", name, ifaces, out)
}

// CleanupAs is Cleanup for `ran --cleanup`, the command the user ran
// ("" for none known): what it says speaks of that command.
func CleanupAs(ran, name string, ifaces []string, out io.Writer) error {
	if err := CheckName(name); err != nil {
		return err
	}
	var entries []netsys.Entry
	command := ""
	who := fmt.Sprintf("instance %q", name)
	if ran != "" {
		who = fmt.Sprintf("%s --cleanup --name %s", ran, name)
	}
	st, err := ReadState(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(out, "%s: no instance of that name recorded (%s); removing anything left under its name\n", who, StatePath(name))
	case err != nil:
		return err
	case st.PID != os.Getpid() && st.Alive():
		return fmt.Errorf("instance %q is still running (pid %d): stop it (SIGTERM) instead", name, st.PID)
	default:
		entries, command = st.Entries, st.Command
	}
	ns := "" // where to undo: see netsys.Do
	if st != nil && st.NetNS != nil {
		path, ok := netsys.FindNS(*st.NetNS)
		if !ok {
			return cleanupGone(name, st, out)
		}
		if path != "" {
			fmt.Fprintf(out, "instance %q lived in %s, not this process's: undoing there\n", name, st.NetNS)
		}
		ns = path
	}
	entries = inNS(entries, ns)
	for i := len(entries) - 1; i >= 0; i-- {
		fmt.Fprintf(out, "undo %s\n", entries[i])
	}
	errs := []error{netsys.UndoEntries(entries)}
	// Its references on shared sysctls, also when the state file that
	// recorded them is lost (with it, the undo above released them).
	if err := checkRunDir(RunDir); err == nil {
		errs = append(errs, netsys.ReleaseSysctls(RunDir, ns, name))
	}
	for cmd, l := range leftovers {
		if command == "" || command == cmd {
			errs = append(errs, netsys.UndoEntries(inNS(l(name), ns)))
		}
	}
	if rules := topology.GatewayLeftovers(name, ifaces...); len(rules) > 0 {
		fmt.Fprintf(out, "sweeping gateway rules of %q for %s\n", name, strings.Join(ifaces, ", "))
		errs = append(errs, netsys.UndoEntries(inNS(rules, ns)))
	} else if st == nil && (ran == "" || ran == "run" || ran == "share") {
		// Only run and share make policy rules, and those name the
		// interfaces, so without them they cannot be told from others'.
		fmt.Fprintf(out, "%s: its policy rules, if any, are removed with --lan IF --wan IF too\n", who)
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

// inNS moves entries made in the instance's own namespace (NS "") to ns,
// the path by which the cleanup reaches it; those in a named namespace
// stay (their names are the same from everywhere).
func inNS(es []netsys.Entry, ns string) []netsys.Entry {
	if ns == "" {
		return es
	}
	out := make([]netsys.Entry, len(es))
	for i, e := range es {
		if e.NS == "" {
			e.NS = ns
		}
		out[i] = e
	}
	return out
}

// cleanupGone is the cleanup of an instance whose network namespace no
// longer exists: its changes there went with it, and none is made here
// in their place. What it made in namespaces of its own (a shell's,
// named after the instance, which lie outside it) is removed; then the
// state file goes, and the error says where the instance lived.
func cleanupGone(name string, st *State, out io.Writer) error {
	var own []netsys.Entry
	var nss []string
	for _, e := range st.Entries {
		switch {
		case e.Kind == netsys.KindNetns:
			nss = append(nss, e.Name)
			own = append(own, e)
		case e.NS != "":
			own = append(own, e)
		}
	}
	for i := len(own) - 1; i >= 0; i-- {
		fmt.Fprintf(out, "undo %s\n", own[i])
	}
	if err := netsys.UndoEntries(own); err != nil {
		return fmt.Errorf("cleanup of %q: %w", name, err)
	}
	if err := os.Remove(StatePath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	os.Remove(SocketPath(name))
	removed := ""
	if len(nss) > 0 {
		removed = "its own namespaces " + strings.Join(nss, ", ") + " and "
	}
	return fmt.Errorf("instance %q lived in %s, which no longer exists: nothing undone there or here (%d of its changes were in it and went with it); removed %sits state file %s",
		name, st.NetNS, len(st.Entries)-len(own), removed, StatePath(name))
}
