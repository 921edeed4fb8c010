package instance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/instance/profile"
	"github.com/pi2hop/pi2hop/internal/connlimit"
	"github.com/pi2hop/pi2hop/lan"
)

// The control socket speaks one JSON request and one JSON response per
// connection. It is a Unix socket in a root-only directory, mode 0600,
// and also checks that the peer is root.

// Request is one control request.
type Request struct {
	Op  string    `json:"op"`            // OpStats, OpSet or OpSettings
	Set *Settings `json:"set,omitempty"` // OpSet: the settings that change
	// Flows asks OpStats for each direction's flow table, its top Flows
	// flows by rate (0: none).
	Flows int `json:"flows,omitempty"`
}

// Ops of a Request.
const (
	OpStats = "stats"
	OpSet   = "set"
	// OpSettings asks for the settings in force: those given at the
	// start (flags, profile, configuration file) with every set since
	// laid over them.
	OpSettings = "settings"
)

// Response answers a Request.
type Response struct {
	Error string `json:"error,omitempty"`
	// Field is the Settings key Error is about (see ErrorKey), if any.
	Field    string        `json:"field,omitempty"`
	Warnings []string      `json:"warnings,omitempty"` // set: settings given without effect
	Stats    *hop.Snapshot `json:"stats,omitempty"`
	// Clients are the LAN's devices of a share (stats): leases and bytes.
	Clients []lan.Client `json:"clients,omitempty"`
	// Flows are the flow tables (up, down), when asked for.
	Flows *[2]hop.FlowTable `json:"flows,omitempty"`
	// Conns are the instance's servers' connection counters (stats).
	Conns *ConnStats `json:"conns,omitempty"`
	// Settings are the settings in force (OpSettings).
	Settings *Settings `json:"settings,omitempty"`
}

// handler is what the control server asks of an instance.
type handler interface {
	stats() hop.Snapshot
	statsFlows(top int) (hop.Snapshot, [2]hop.FlowTable)
	clients() ([]lan.Client, error)
	set(Settings) ([]string, error)
	settingsInForce() Settings
	connStats() ConnStats
}

type controlServer struct {
	ln   *connlimit.Listener
	h    handler
	wg   sync.WaitGroup
	once sync.Once
	work chan job
	// answered is closed when the answering goroutine has ended.
	answered chan struct{}
	snap     *hop.Snapshot // serve's, reused
	// peerOK checks a client: peerIsRoot (tests that run as any user let
	// everyone in).
	peerOK func(net.Conn) error
}

// MaxControlConns caps the control socket's open connections: a client
// opens one per request, so only a crowd holds more, and every one beyond
// is closed at once (counted as refused) instead of costing memory and fds.
const MaxControlConns = 512

// A job is one decoded request for the answering goroutine.
type job struct {
	c    net.Conn
	req  Request
	done chan struct{}
}

func listenControl(name string, h handler, c *connlimit.Counters, lg *connlimit.Limited) (*controlServer, error) {
	path := SocketPath(name)
	if err := checkRunDir(RunDir); err != nil {
		return nil, err
	}
	os.Remove(path) // claim made sure no live instance owns it
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return serveControl(ln, h, peerIsRoot, c, lg), nil
}

// serveControl serves requests on ln until Close, from clients peerOK
// lets in.
func serveControl(ln net.Listener, h handler, peerOK func(net.Conn) error, c *connlimit.Counters, lg *connlimit.Limited) *controlServer {
	s := &controlServer{ln: connlimit.Listen(ln, "control socket", MaxControlConns, c, lg), h: h, peerOK: peerOK,
		work: make(chan job), answered: make(chan struct{})}
	s.wg.Add(1)
	go s.accept()
	go s.answer()
	return s
}

// accept runs until Close: the listener retries every other error.
func (s *controlServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(c)
		}()
	}
}

// handle checks the peer and reads its request; the answering goroutine
// answers. A waiting connection holds its request and a read buffer, a
// few KB, however many wait.
func (s *controlServer) handle(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var resp Response
	if err := s.peerOK(c); err != nil {
		resp.Error = err.Error()
	} else if req, err := DecodeRequest(c); err != nil {
		resp.Error = "bad request: " + err.Error()
	} else {
		j := job{c: c, req: req, done: make(chan struct{})}
		s.work <- j
		<-j.done
		return
	}
	json.NewEncoder(c).Encode(resp)
}

// answer serves the requests one at a time from one goroutine, in one
// snapshot and one buffer it reuses. A snapshot is over 100 KB: taken on
// each connection's goroutine, every one of hundreds of concurrent
// requests grew its own stack and heap by several times that, and the
// runtime kept the memory long after they ended. The snapshots are taken
// one at a time in any case (the hop's owner hands them over in turn).
func (s *controlServer) answer() {
	defer close(s.answered)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for j := range s.work {
		buf.Reset()
		resp := s.serve(j.req)
		enc.Encode(&resp)
		j.c.SetWriteDeadline(time.Now().Add(time.Second))
		j.c.Write(buf.Bytes())
		if buf.Cap() > 1<<20 { // a flow table's answer: not kept
			buf = bytes.Buffer{}
			enc = json.NewEncoder(&buf)
		}
		close(j.done)
	}
}

// MaxRequest bounds a control request: a Settings edit is a few hundred
// bytes, and a peer that sends more is not a pi2hop client.
const MaxRequest = 64 << 10

// DecodeRequest reads one JSON request of at most MaxRequest bytes.
func DecodeRequest(r io.Reader) (Request, error) {
	var req Request
	lr := &io.LimitedReader{R: r, N: MaxRequest + 1}
	if err := json.NewDecoder(lr).Decode(&req); err != nil { // it buffers itself
		if lr.N <= 0 {
			return Request{}, fmt.Errorf("request longer than %d bytes", MaxRequest)
		}
		return Request{}, err
	}
	return req, nil
}

// serve answers one decoded request.
// One goroutine at a time: the answer points into s.snap, which the next
// request overwrites.
func (s *controlServer) serve(req Request) Response {
	var resp Response
	switch req.Op {
	case OpStats:
		if s.snap == nil {
			s.snap = new(hop.Snapshot)
		}
		if req.Flows > 0 {
			var ft [2]hop.FlowTable
			*s.snap, ft = s.h.statsFlows(min(req.Flows, hop.FlowTableSize))
			resp.Flows = &ft
		} else {
			*s.snap = s.h.stats()
		}
		resp.Stats = s.snap
		cl, err := s.h.clients()
		if err != nil {
			resp.Error = "clients: " + err.Error()
		}
		resp.Clients = cl
		conns := s.h.connStats()
		resp.Conns = &conns
	case OpSet:
		if req.Set == nil {
			resp.Error = "set: no settings"
			break
		}
		warnings, err := s.h.set(*req.Set)
		resp.Warnings = warnings
		if err != nil {
			resp.Error, resp.Field = err.Error(), ErrorKey(err)
		}
	case OpSettings:
		s := s.h.settingsInForce()
		resp.Settings = &s
	default:
		resp.Error = fmt.Sprintf("unknown op %q (want %s, %s or %s)", req.Op, OpStats, OpSet, OpSettings)
	}
	return resp
}

func peerIsRoot(c net.Conn) error {
	if nc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = nc.NetConn()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return errors.New("control socket: not a Unix connection")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var uid uint32 = 1
	var cerr error
	raw.Control(func(fd uintptr) {
		uid, cerr = peerUID(int(fd))
	})
	if cerr != nil {
		return cerr
	}
	if uid != 0 {
		return errors.New("permission denied: the control socket is for root only")
	}
	return nil
}

// Close stops accepting, waits for open requests and removes the socket.
func (s *controlServer) Close() error {
	var err error
	s.once.Do(func() {
		err = s.ln.Close()
		s.wg.Wait() // the acceptor and every connection
		close(s.work)
		<-s.answered
	})
	return err
}

// RemoteError is an error the instance answered with.
type RemoteError struct {
	Instance string
	Field    string // as Response.Field
	Msg      string
}

func (e *RemoteError) Error() string { return e.Msg }

// Call sends one request to instance name. An error the instance answers
// with is a *RemoteError; the response comes back with it (warnings).
func Call(name string, req Request) (*Response, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("unix", SocketPath(name), 2*time.Second)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no running instance %q (no %s); start one with 'pi2hop run' or 'pi2hop shell', or give --name", name, SocketPath(name))
		}
		return nil, fmt.Errorf("instance %q: %w", name, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return nil, err
	}
	var resp Response
	if err := json.NewDecoder(c).Decode(&resp); err != nil {
		return nil, fmt.Errorf("instance %q: reading the answer: %w", name, err)
	}
	if resp.Error != "" {
		return &resp, &RemoteError{Instance: name, Field: resp.Field, Msg: resp.Error}
	}
	return &resp, nil
}

// Stats asks instance name for a stats snapshot.
func Stats(name string) (*hop.Snapshot, error) {
	snap, _, _, err := StatsAndClients(name)
	return snap, err
}

// StatsFlows asks instance name for a stats snapshot with each
// direction's top flows by rate, and the LAN's clients of a share.
func StatsFlows(name string, top int) (*hop.Snapshot, [2]hop.FlowTable, []lan.Client, error) {
	resp, err := Call(name, Request{Op: OpStats, Flows: max(top, 1)})
	if err != nil {
		return nil, [2]hop.FlowTable{}, nil, err
	}
	if resp.Stats == nil || resp.Flows == nil {
		return nil, [2]hop.FlowTable{}, nil, fmt.Errorf("instance %q: answer without flows (an instance of an older build?)", name)
	}
	return resp.Stats, *resp.Flows, resp.Clients, nil
}

// StatsAndClients asks instance name for a stats snapshot, from a share
// the LAN's devices, and its servers' connection counters (nil from an
// instance of an older build).
func StatsAndClients(name string) (*hop.Snapshot, []lan.Client, *ConnStats, error) {
	resp, err := Call(name, Request{Op: OpStats})
	if err != nil {
		return nil, nil, nil, err
	}
	if resp.Stats == nil {
		return nil, nil, nil, fmt.Errorf("instance %q: answer without stats", name)
	}
	return resp.Stats, resp.Clients, resp.Conns, nil
}

// Set sends a typed edit to instance name, which merges it over its
// settings, checks the result and applies it to both directions at once
// or not at all. It returns the instance's warnings (see
// Settings.Warnings), with or without an error. The instance reads rate
// trace files from its own directory, so Set makes the trace paths of s
// absolute, in place: the caller's strings then name what was sent.
func Set(name string, s Settings) ([]string, error) {
	s.absTraces()
	resp, err := Call(name, Request{Op: OpSet, Set: &s})
	if resp == nil {
		return nil, err
	}
	return resp.Warnings, err
}

// SettingsOf asks instance name for its settings in force.
func SettingsOf(name string) (Settings, error) {
	resp, err := Call(name, Request{Op: OpSettings})
	if err != nil {
		return Settings{}, err
	}
	if resp.Settings == nil {
		return Settings{}, fmt.Errorf("instance %q: answer without settings (an instance of an older build?)", name)
	}
	return *resp.Settings, nil
}

// absTraces makes s's rate trace paths absolute, writing through the
// pointers; a trace shipped in the binary keeps its name.
func (s *Settings) absTraces() {
	for _, p := range []*string{s.RateTrace, s.UpRateTrace, s.DownRateTrace} {
		if p != nil && !strings.HasPrefix(*p, profile.TracePrefix) {
			if abs, err := filepath.Abs(*p); err == nil {
				*p = abs
			}
		}
	}
}
