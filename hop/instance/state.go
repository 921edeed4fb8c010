// Package instance runs a hop as a named, long-lived instance: it claims
// the name, keeps a state file with every change made to the system (so a
// crashed instance can be cleaned up), serves a control socket that takes
// stats requests and typed edits, exports Prometheus metrics, and takes
// everything down in order. Where the hop sits is a Topology: a Gateway
// (pi2hop run), a Shell, or a Task that builds its own hops (the lab).
//
// The lifecycle (Run), in order:
//
//  1. check the name and privileges, claim the name (state file) and start
//     a journal saved to it;
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
	"os"
	"path/filepath"
	"regexp"
	"syscall"

	"github.com/pi2hop/pi2hop/tun"
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

// State is the state file: who runs the instance and every change it made
// to the system, kept current so a cleanup can undo the changes of an
// instance that was killed.
type State struct {
	PID     int         `json:"pid"`
	Command string      `json:"command"`
	Entries []tun.Entry `json:"entries"`
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
	if err := os.MkdirAll(RunDir, 0o700); err != nil {
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

// ProcessAlive reports whether pid names a live process.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// claim takes name for this process, refusing one in use or left behind
// by a crash, and returns a journal saved to the state file.
func claim(name, command string) (*tun.Journal, error) {
	if old, err := ReadState(name); err == nil {
		if ProcessAlive(old.PID) {
			return nil, fmt.Errorf("instance %q is already running (pid %d); pick another name", name, old.PID)
		}
		if len(old.Entries) > 0 {
			return nil, fmt.Errorf("instance %q left changes behind (pid %d is gone): run 'pi2hop run --cleanup --name %s' first", name, old.PID, name)
		}
	}
	st := State{PID: os.Getpid(), Command: command}
	save := func(es []tun.Entry) error {
		st.Entries = es
		return WriteState(name, &st)
	}
	if err := save(nil); err != nil {
		return nil, err
	}
	return tun.NewJournal(save), nil
}
