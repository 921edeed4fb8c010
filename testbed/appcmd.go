//go:build linux

package testbed

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/invoker"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/testbed/report"
)

// appCommand is one of the app's commands, client or server, running in
// a namespace of a lab app run: `sh -c LINE` as the invoking user, in a
// process group of its own (so the lab can stop all it started), with
// standard input from /dev/null.
type appCommand struct {
	role, line string
	cmd        *exec.Cmd
	started    time.Time
	done       chan struct{} // closed once it ended and its output was read
	exit       report.AppExit
	stopped    bool // the lab sent it SIGTERM
	metrics    *metricLines
	stderr     *tailLines
	mu         sync.Mutex
}

// Limits on what the lab keeps of an app's output: its last lines of
// standard error, and metric values (the rest are counted, not kept).
const (
	stderrTail   = 10
	maxLineBytes = 4096
	maxMetrics   = 64
	maxValues    = 1 << 20
)

// shellPath runs the app's command lines.
const shellPath = "/bin/sh"

// shellBuiltins are words that may start a command line and are not
// programs on PATH: CheckAppCommand does not look them up.
var shellBuiltins = map[string]bool{"exec": true, "eval": true, "cd": true, ".": true, "set": true,
	"export": true, "command": true, "{": true, "(": true, "!": true, "if": true, "for": true, "while": true, "until": true, "case": true}

// CheckAppCommand fails, naming it, when the program that line starts
// is not found in u's PATH or u may not run it, so lab app can refuse
// before it builds anything. Lines the check cannot read (a first word
// with quotes, expansions or a shell keyword) are left to the shell.
func CheckAppCommand(line string, u *invoker.User) error {
	words := strings.Fields(line)
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.ContainsAny(words[0], `'"$`+"`") {
		words = words[1:] // VAR=value before the command
	}
	if len(words) == 0 {
		return errors.New("empty command")
	}
	if words[0] == "exec" && len(words) > 1 {
		words = words[1:]
	}
	name := words[0]
	if shellBuiltins[name] || strings.ContainsAny(name, `'"$`+"`\\*?[~;&|<>(){}") {
		return nil
	}
	var env []string
	if u != nil {
		env = u.Env()
	} else {
		env = os.Environ()
	}
	path, err := invoker.LookPath(name, env)
	if err != nil {
		return err
	}
	if u != nil && !u.Root() && !mayExec(path, *u) {
		return fmt.Errorf("%s: %s may not run it (mode and owner of the file)", path, u.Name)
	}
	return nil
}

// mayExec reports whether u may execute path by its mode bits: the
// owner's, the group's or the others', as the kernel picks them.
func mayExec(path string, u invoker.User) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == u.UID:
		return perm&0o100 != 0
	case st.Gid == u.GID || inGroups(st.Gid, u.Groups):
		return perm&0o010 != 0
	}
	return perm&fs.FileMode(0o001) != 0
}

func inGroups(g uint32, gs []uint32) bool {
	for _, x := range gs {
		if x == g {
			return true
		}
	}
	return false
}

// startAppCommand starts line in namespace ns ("" = this one) as u (nil:
// as root), with extra in its environment.
func startAppCommand(ns, role, line string, u *invoker.User, extra []string) (*appCommand, error) {
	c := &appCommand{role: role, line: line, done: make(chan struct{}), metrics: newMetricLines(), stderr: newTailLines(stderrTail)}
	c.exit.Command = line
	env := append(os.Environ(), extra...)
	if u != nil {
		env = u.Env(extra...)
	}
	c.cmd = &exec.Cmd{Path: shellPath, Args: []string{"sh", "-c", line}, Env: env}
	c.cmd.SysProcAttr = invoker.ChildAttr(u)
	c.cmd.SysProcAttr.Setpgid = true
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := netsys.Do(ns, c.cmd.Start); err != nil {
		c.exit.Code, c.exit.Failed = -1, true
		close(c.done)
		return c, fmt.Errorf("%s: start %q: %w", role, line, err)
	}
	c.started = time.Now()
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); c.metrics.read(stdout) }()
	go func() { defer readers.Done(); c.stderr.read(stderr) }()
	go func() {
		// Wait closes the pipes once the process is gone: the readers
		// first, so a fast command's last lines are not lost.
		readers.Wait()
		err := c.cmd.Wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.exit.RunS = time.Since(c.started).Seconds()
		c.exit.Code = exitCode(c.cmd.ProcessState, err)
		c.exit.Stopped = c.stopped
		c.exit.Failed = !c.stopped && c.exit.Code != 0
		c.exit.StderrTail = c.stderr.lines()
		close(c.done)
	}()
	return c, nil
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	if err != nil && ps.ExitCode() == 0 {
		return -1
	}
	return ps.ExitCode()
}

// stop ends the command if it still runs: SIGTERM to its process group,
// SIGKILL after grace. It returns once the command ended.
func (c *appCommand) stop(grace time.Duration) {
	select {
	case <-c.done:
		return
	default:
	}
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	pgid := c.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-c.done:
		return
	case <-time.After(grace):
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	<-c.done
}

// result is how the command ended and the metrics it printed; call it
// once done is closed.
func (c *appCommand) result() (report.AppExit, []report.AppMetric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exit, c.metrics.summaries(c.role)
}

// metricLines reads an app's standard output and keeps the values of
// its metric lines, {"metric": NAME, "value": X, "unit": U}; other lines
// are ignored.
type metricLines struct {
	mu      sync.Mutex
	order   []string
	values  map[string][]float64
	units   map[string]string
	kept    int
	dropped int // values beyond maxValues, or of metrics beyond maxMetrics
}

func newMetricLines() *metricLines {
	return &metricLines{values: map[string][]float64{}, units: map[string]string{}}
}

func (m *metricLines) read(r io.Reader) {
	forLines(r, func(line []byte) {
		var v struct {
			Metric *string  `json:"metric"`
			Value  *float64 `json:"value"`
			Unit   string   `json:"unit"`
		}
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &v) != nil || v.Metric == nil || v.Value == nil || *v.Metric == "" {
			return
		}
		m.add(*v.Metric, v.Unit, *v.Value)
	})
}

func (m *metricLines) add(name, unit string, x float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.values[name]; !ok {
		if len(m.order) >= maxMetrics {
			m.dropped++
			return
		}
		m.order = append(m.order, name)
		m.units[name] = unit
	}
	if m.kept >= maxValues {
		m.dropped++
		return
	}
	m.values[name] = append(m.values[name], x)
	m.kept++
}

func (m *metricLines) summaries(role string) []report.AppMetric {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []report.AppMetric
	for _, name := range m.order {
		out = append(out, report.AppMetric{Name: name, Unit: m.units[name], From: role, Summary: figure.Summarise(m.values[name])})
	}
	return out
}

// tailLines keeps the last n lines of a stream.
type tailLines struct {
	mu   sync.Mutex
	n    int
	ring []string
}

func newTailLines(n int) *tailLines { return &tailLines{n: n} }

func (t *tailLines) read(r io.Reader) {
	forLines(r, func(line []byte) {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.ring = append(t.ring, string(line))
		if len(t.ring) > t.n {
			t.ring = t.ring[1:]
		}
	})
}

func (t *tailLines) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.ring...)
}

// forLines calls f with each line of r (without its newline), a line
// longer than maxLineBytes cut there, until r ends.
func forLines(r io.Reader, f func([]byte)) {
	br := bufio.NewReaderSize(r, maxLineBytes)
	for {
		line, err := br.ReadSlice('\n')
		long := errors.Is(err, bufio.ErrBufferFull)
		if len(line) > 0 {
			f(trimEOL(line))
		}
		for long { // skip the rest of an overlong line
			_, err = br.ReadSlice('\n')
			long = errors.Is(err, bufio.ErrBufferFull)
		}
		if err != nil {
			return
		}
	}
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}
