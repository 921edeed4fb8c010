package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"syscall"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/tun"
	"github.com/spf13/pflag"
)

// runDir holds each live instance's state file and control socket.
const runDir = "/run/pi2hop"

const defaultInstance = "pi2hop"

// instanceNameRE: the name becomes part of device names (at most 15
// bytes with a 3-byte suffix) and file names.
var instanceNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,11}$`)

func checkInstanceName(name string) error {
	if !instanceNameRE.MatchString(name) {
		return usagef("--name %q: want 1 to 12 letters, digits, '_', '-' or '.', not starting with '-' or '.'", name)
	}
	return nil
}

func statePath(name string) string  { return filepath.Join(runDir, name+".json") }
func socketPath(name string) string { return filepath.Join(runDir, name+".sock") }

// instanceState is the state file: who runs the instance and every change
// it made to the system, kept current so `run --cleanup` can undo the
// changes of an instance that was killed.
type instanceState struct {
	PID     int         `json:"pid"`
	Command string      `json:"command"`
	Entries []tun.Entry `json:"entries"`
}

func readState(name string) (*instanceState, error) {
	b, err := os.ReadFile(statePath(name))
	if err != nil {
		return nil, err
	}
	var s instanceState
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("state file %s: %w", statePath(name), err)
	}
	return &s, nil
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// cpuLatencyUsage is the help of --cpu-latency (run, shell, lab).
const cpuLatencyUsage = "CPU wake-up `latency` asked of the idle states while the hop runs (PM QoS): 0 keeps idle CPUs polling, so a packet or timer wakes the hop in µs, not the 50-100 µs of a halted VM CPU; off saves power"

// instanceFlags are the flags every long-running hop command has.
type instanceFlags struct {
	name       string
	metrics    string
	verbose    bool
	cpuLatency cpuLatencyValue
}

func addInstanceFlags(fs *pflag.FlagSet) *instanceFlags {
	f := &instanceFlags{}
	fs.StringVar(&f.name, "name", defaultInstance, "instance `name`: tags devices, rules and files (/run/pi2hop/NAME.*); stats and set find the instance by it")
	fs.StringVar(&f.metrics, "metrics", "", "serve Prometheus /metrics on `ADDR` (host:port; a bare :port binds to loopback)")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "log debug messages")
	fs.Var(&f.cpuLatency, "cpu-latency", cpuLatencyUsage)
	return f
}

// instance is a running hop with its journal, control socket and metrics.
type instance struct {
	name    string
	args    []string // the command line's flags, for merging `set` requests
	journal *tun.Journal
	log     *slog.Logger
	hop     *hop.Hop
	closers []io.Closer
}

// givenFlags returns the flags set on fs as --name=value, in the units
// they parse from, so they can be parsed again (see mergeEdit).
func givenFlags(fs *pflag.FlagSet) []string {
	var args []string
	fs.Visit(func(f *pflag.Flag) { args = append(args, "--"+f.Name+"="+f.Value.String()) })
	return args
}

// startInstance claims the instance name (refusing one that is in use
// or left behind by a crash) and starts a journal saved to its state file.
func startInstance(f *instanceFlags, command string, args []string, stderr io.Writer) (*instance, error) {
	if err := checkInstanceName(f.name); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%s needs root (TUN devices, namespaces, routes)", command)
	}
	if old, err := readState(f.name); err == nil {
		if processAlive(old.PID) {
			return nil, fmt.Errorf("instance %q is already running (pid %d); pick another --name", f.name, old.PID)
		}
		if len(old.Entries) > 0 {
			return nil, fmt.Errorf("instance %q left changes behind (pid %d is gone): run 'pi2hop run --cleanup --name %s' first", f.name, old.PID, f.name)
		}
	}
	level := slog.LevelInfo
	if f.verbose {
		level = slog.LevelDebug
	}
	in := &instance{
		name: f.name,
		args: args,
		log:  slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})).With("instance", f.name),
	}
	st := instanceState{PID: os.Getpid(), Command: command}
	save := func(es []tun.Entry) error {
		st.Entries = es
		return writeState(f.name, &st)
	}
	if err := save(nil); err != nil {
		return nil, err
	}
	in.journal = tun.NewJournal(save)
	return in, nil
}

func writeState(name string, st *instanceState) error {
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := statePath(name) + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, statePath(name))
}

// serve starts the control socket and, if asked, the metrics endpoint for
// h. They stop in close.
func (in *instance) serve(ctx context.Context, h *hop.Hop, metricsAddr string) error {
	in.hop = h
	ctl, err := listenControl(in.name, in)
	if err != nil {
		return err
	}
	in.closers = append(in.closers, ctl)
	if metricsAddr != "" {
		m, err := serveMetrics(metricsAddr, h)
		if err != nil {
			return err
		}
		in.closers = append(in.closers, m)
	}
	return nil
}

// set applies a `pi2hop set` request: its flags over the command line's.
func (in *instance) set(args []string) error {
	e, err := mergeEdit(in.args, args, in.hop.Config())
	if err != nil {
		return err
	}
	if err := in.hop.Set(e); err != nil {
		return err
	}
	in.args = append(withoutTail(in.args), args...)
	c := in.hop.Config()
	in.log.Info("changed", "up", describeDir(c.Up), "down", describeDir(c.Down))
	return nil
}

// close stops serving, then stops the hop with stopHop (which closes its
// devices), undoes every change and removes the state file.
func (in *instance) close(stopHop func() error) error {
	var errs []error
	for i := len(in.closers) - 1; i >= 0; i-- {
		errs = append(errs, in.closers[i].Close())
	}
	if stopHop != nil {
		errs = append(errs, stopHop())
	}
	errs = append(errs, in.journal.Undo())
	err := errors.Join(errs...)
	if err == nil {
		os.Remove(statePath(in.name))
	} else {
		in.log.Error("cleanup incomplete; run 'pi2hop run --cleanup --name "+in.name+"'", "err", err)
	}
	return err
}

// cleanupInstance undoes what a dead instance left, from its state file,
// then sweeps what instances of that name make by convention (the shell's
// namespace, the NAT table, the gateway's rules) in case the state file
// is gone or was cut short. Sysctls can only be restored from the record.
func cleanupInstance(name string, stdout io.Writer) error {
	if err := checkInstanceName(name); err != nil {
		return err
	}
	var entries []tun.Entry
	st, err := readState(name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		fmt.Fprintf(stdout, "instance %q: no state file %s; removing what its name implies\n", name, statePath(name))
	case err != nil:
		return err
	case st.PID != os.Getpid() && processAlive(st.PID):
		return fmt.Errorf("instance %q is still running (pid %d): stop it (SIGTERM) instead", name, st.PID)
	default:
		entries = st.Entries
	}
	for i := len(entries) - 1; i >= 0; i-- {
		fmt.Fprintf(stdout, "undo %s\n", entries[i])
	}
	errs := []error{tun.UndoEntries(entries), tun.UndoEntries(conventionalLeftovers(name))}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cleanup of %q: %w", name, err)
	}
	os.Remove(socketPath(name))
	if err := os.Remove(statePath(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// conventionalLeftovers lists what instance name makes that outlives the
// process: the shell's namespace, the NAT table and the gateway's policy
// rules (its TUN devices, and the routes through them, die with it).
func conventionalLeftovers(name string) []tun.Entry {
	es := []tun.Entry{
		{Kind: tun.KindNetns, Name: name + "-shell"},
		{Kind: tun.KindNftTable, Name: "pi2hop-" + name},
	}
	up, down, prio := gatewayTables(name)
	for _, table := range []int{up, down} {
		for _, fam := range []int{4, 6} {
			es = append(es, tun.Entry{Kind: tun.KindRule, Table: table, Priority: prio, Family: fam})
		}
	}
	return es
}
