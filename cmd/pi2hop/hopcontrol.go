package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/pi2hop/pi2hop/hop"
)

// The control socket speaks one JSON request and one JSON response per
// connection. It is a Unix socket in a root-only directory, mode 0600,
// and also checks that the peer is root.

type controlRequest struct {
	Op   string   `json:"op"`             // "stats" or "set"
	Args []string `json:"args,omitempty"` // set: link flags, as on the command line
}

type controlResponse struct {
	Error string        `json:"error,omitempty"`
	Stats *hop.Snapshot `json:"stats,omitempty"`
}

type controlServer struct {
	ln   net.Listener
	in   *instance
	wg   sync.WaitGroup
	once sync.Once
}

func listenControl(name string, in *instance) (*controlServer, error) {
	path := socketPath(name)
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return nil, err
	}
	os.Remove(path) // startInstance made sure no live instance owns it
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	s := &controlServer{ln: ln, in: in}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

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
			s.handle(c.(*net.UnixConn))
		}()
	}
}

func (s *controlServer) handle(c *net.UnixConn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var resp controlResponse
	var req controlRequest
	switch err := peerIsRoot(c); {
	case err != nil:
		resp.Error = err.Error()
	default:
		if err := json.NewDecoder(bufio.NewReader(c)).Decode(&req); err != nil {
			resp.Error = "bad request: " + err.Error()
			break
		}
		switch req.Op {
		case "stats":
			snap := s.in.hop.Stats()
			resp.Stats = &snap
		case "set":
			if err := s.in.set(req.Args); err != nil {
				resp.Error = err.Error()
			}
		default:
			resp.Error = fmt.Sprintf("unknown op %q (want stats or set)", req.Op)
		}
	}
	json.NewEncoder(c).Encode(resp)
}

func peerIsRoot(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
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
		s.wg.Wait()
	})
	return err
}

// controlCall sends one request to instance name.
func controlCall(name string, req controlRequest) (*controlResponse, error) {
	if err := checkInstanceName(name); err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("unix", socketPath(name), 2*time.Second)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no running instance %q (no %s); start one with 'pi2hop run' or 'pi2hop shell', or give --name", name, socketPath(name))
		}
		return nil, fmt.Errorf("instance %q: %w", name, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return nil, err
	}
	var resp controlResponse
	if err := json.NewDecoder(c).Decode(&resp); err != nil {
		return nil, fmt.Errorf("instance %q: reading the answer: %w", name, err)
	}
	if resp.Error != "" {
		return &resp, errors.New(resp.Error)
	}
	return &resp, nil
}
