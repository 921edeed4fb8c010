// Package instance runs a hop as a named, long-lived instance: it claims
// the name, keeps a state file with every change made to the system (so a
// crashed instance can be cleaned up), serves a control socket that takes
// stats requests and typed edits, exports Prometheus metrics, and takes
// everything down in order. Where the hop sits is a Topology: a Gateway
// (pi2hop run), a Shell, or a Task that builds its own hops (the lab).
//
// The lifecycle (Run), in order:
//
//  1. check the name and privileges, claim the name (state file, with the
//     process's PID and start time) and start a journal saved to it, whose
//     namespace-wide sysctls are reference-counted with other instances;
//     warn of dead instances' leftovers, naming the command that removes
//     them (CleanupCommand);
//  2. open the capture;
//  3. start the topology (devices, routes, the hop), every system change
//     recorded in the journal;
//  4. serve the control socket and the metrics;
//  5. log the start-up line;
//  6. wait for the topology's work to end (a signal, the hop stopping,
//     the shell's command exiting);
//  7. stop serving, close the topology, the capture, undo the journal and
//     remove the state file.
package instance

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/pi2hop/pi2hop/netsys"
)

// RunDir holds each live instance's state file and control socket.
const RunDir = "/run/pi2hop"

// DefaultName is the instance name when none is given.
const DefaultName = "pi2hop"

// nameRE: the name becomes part of device names (at most 15 bytes with a
// 3-byte suffix) and file names.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,11}$`)

// CheckName refuses a name that cannot tag devices and files.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("instance name %q: want 1 to 12 letters, digits, '_', '-' or '.', not starting with '-' or '.'", name)
	}
	return nil
}

// StatePath and SocketPath are where instance name keeps its state file
// and control socket.
func StatePath(name string) string  { return filepath.Join(RunDir, name+".json") }
func SocketPath(name string) string { return filepath.Join(RunDir, name+".sock") }

// CleanupCommand is the command that removes what a dead instance of
// command ("run", "shell", "lab", "share") named name left: every such command has
// --cleanup, and each removes any instance's leftovers.
func CleanupCommand(command, name string) string {
	switch command {
	case "run", "shell", "lab", "share":
	default:
		command = "run"
	}
	return "pi2hop " + command + " --cleanup --name " + name
}

// checkRunDir makes folder dir if it is missing and refuses it unless it
// is a real folder (not a link) owned by root with mode 0700: the
// control sockets in it are for root only, and the state files in it say
// what to undo, so nobody else may swap them.
func checkRunDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	uid, ok := fileOwner(fi)
	if !ok {
		return fmt.Errorf("%s: no owner to check", dir)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link: want a folder owned by root with mode 0700; remove the link", dir)
	case !fi.IsDir():
		return fmt.Errorf("%s is not a folder: want a folder owned by root with mode 0700; remove it", dir)
	case uid != 0:
		return fmt.Errorf("%s is owned by uid %d: want a folder owned by root with mode 0700 (chown root %s, or remove it)", dir, uid, dir)
	case fi.Mode().Perm() != 0o700:
		return fmt.Errorf("%s has mode %04o: want a folder owned by root with mode 0700 (chmod 700 %s)", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// State is the state file: who runs the instance and every change it made
// to the system, kept current so a cleanup can undo the changes of an
// instance that was killed.
type State struct {
	PID int `json:"pid"`
	// Start is the process's start time (field 22 of /proc/PID/stat, in
	// clock ticks since boot): with the PID it names the process, as a
	// PID alone may have been reused since.
	Start   uint64 `json:"start,omitempty"`
	Command string `json:"command"`
	// NetNS is the network namespace the instance ran in: its entries
	// without a namespace of their own are changes there, and a cleanup
	// undoes them there or nowhere. Nil in a state file from before it
	// was kept.
	NetNS *netsys.NSID `json:"netns,omitempty"`
	// Slots are what the instance holds of the spaces shared among
	// instances (Env.Slot), by space.
	Slots   map[string]int `json:"slots,omitempty"`
	Entries []netsys.Entry `json:"entries"`
}

// ReadState reads instance name's state file.
func ReadState(name string) (*State, error) {
	b, err := os.ReadFile(StatePath(name))
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("state file %s: %w", StatePath(name), err)
	}
	return &s, nil
}

// WriteState replaces instance name's state file atomically.
func WriteState(name string, st *State) error {
	if err := checkRunDir(RunDir); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := StatePath(name) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, StatePath(name))
}

// Alive reports whether the process that wrote st still runs: its PID is
// there and started when st says (a PID reused by another process is
// not). A state file without a start time falls back to the PID alone.
func (st *State) Alive() bool {
	if st.PID <= 0 {
		return false
	}
	start, err := ProcStart(st.PID)
	if err != nil {
		return false
	}
	return st.Start == 0 || start == st.Start
}

// ProcStart returns process pid's start time: field 22 of /proc/PID/stat
// (proc(5)), in clock ticks since boot. The fields are counted after the
// command name's closing parenthesis, as the name may hold spaces and
// parentheses itself.
func ProcStart(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStart(string(b))
}

func parseStart(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat %q: no command name", stat)
	}
	// After ") ": field 3 (state) onwards; field 22 is the 20th of them.
	f := strings.Fields(stat[i+1:])
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc stat: %d fields after the name, want at least 20", len(f))
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// Leftover is a dead instance whose changes are still on the system.
type Leftover struct {
	Name  string
	State *State
}

// Command is the command that removes the leftover.
func (l Leftover) Command() string { return CleanupCommand(l.State.Command, l.Name) }

// Leftovers lists the instances whose state file records changes while
// their process is gone.
func Leftovers() ([]Leftover, error) {
	names, err := stateNames(RunDir)
	if err != nil {
		return nil, err
	}
	var out []Leftover
	for _, name := range names {
		st, err := ReadState(name)
		if err != nil || st.Alive() || len(st.Entries) == 0 {
			continue
		}
		out = append(out, Leftover{name, st})
	}
	return out, nil
}

// claim takes name for this process, refusing one in use or left behind
// by a crash, and returns its state file with a journal saved to it,
// whose shared sysctls are counted in RunDir. The check and the first
// write are one step under RunDir's lock, so two instances starting with
// one name cannot both take it.
func claim(name, command string) (*claimed, *netsys.Journal, error) {
	if err := checkRunDir(RunDir); err != nil {
		return nil, nil, err
	}
	ns, err := netsys.CurrentNS()
	if err != nil {
		return nil, nil, fmt.Errorf("network namespace of this process: %w", err)
	}
	unlock, err := netsys.LockDir(RunDir)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	if old, err := ReadState(name); err == nil {
		if old.PID == os.Getpid() || old.Alive() {
			return nil, nil, fmt.Errorf("instance %q is already running (pid %d); pick another name", name, old.PID)
		}
		if len(old.Entries) > 0 {
			return nil, nil, fmt.Errorf("instance %q left changes behind (pid %d is gone): run '%s' first", name, old.PID, CleanupCommand(old.Command, name))
		}
	}
	start, err := ProcStart(os.Getpid())
	if err != nil {
		return nil, nil, err
	}
	c := &claimed{name: name, st: State{PID: os.Getpid(), Start: start, Command: command, NetNS: &ns}}
	if err := c.save(func(*State) {}); err != nil {
		return nil, nil, err
	}
	j := netsys.NewJournal(func(es []netsys.Entry) error {
		return c.save(func(st *State) { st.Entries = es })
	})
	j.ShareSysctls(RunDir, name, func(holder string) bool {
		st, err := ReadState(holder)
		return err == nil && st.Alive()
	})
	return c, j, nil
}
