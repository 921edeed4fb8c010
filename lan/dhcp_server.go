package lan

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/server4"
)

// DHCPServer serves DHCPv4 on one LAN device.
type DHCPServer struct {
	mu   sync.Mutex
	t    *leaseTable
	srv  *server4.Server
	log  *slog.Logger
	once sync.Once
}

// NewDHCPServer binds UDP port 67 on cfg.Iface (SO_BINDTODEVICE, so it
// hears the LAN's broadcasts and only them) in the namespace of the
// calling thread. Serve answers.
func NewDHCPServer(cfg DHCPConfig, log *slog.Logger) (*DHCPServer, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if cfg.Iface == "" {
		return nil, errors.New("lan: DHCP server: no LAN device")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &DHCPServer{t: newLeaseTable(cfg), log: log}
	srv, err := server4.NewServer(cfg.Iface, &net.UDPAddr{Port: dhcpv4.ServerPort}, s.serve)
	if err != nil {
		return nil, fmt.Errorf("lan: DHCP server on %s: %w", cfg.Iface, err)
	}
	s.srv = srv
	return s, nil
}

// Serve answers requests until Close; it returns nil after Close.
func (s *DHCPServer) Serve() error {
	err := s.srv.Serve()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Close stops the server; Serve returns.
func (s *DHCPServer) Close() error {
	var err error
	s.once.Do(func() { err = s.srv.Close() })
	return err
}

// Leases returns the lease table sorted by address, expired ones too
// (their devices get the same address back when they return).
func (s *DHCPServer) Leases() []Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t.list()
}

// serve is the server4 handler, called on a goroutine per message.
func (s *DHCPServer) serve(conn net.PacketConn, peer net.Addr, req *dhcpv4.DHCPv4) {
	s.mu.Lock()
	reply, changed, err := s.t.handle(req, s.t.cfg.Now())
	if changed && s.t.cfg.OnChange != nil {
		s.t.cfg.OnChange(s.t.list())
	}
	s.mu.Unlock()
	if err != nil {
		s.log.Debug("dhcp: no reply", "mac", req.ClientHWAddr.String(), "type", req.MessageType().String(), "why", err)
		return
	}
	if reply == nil {
		return
	}
	dst := replyDest(req, reply)
	if _, err := conn.WriteTo(reply.ToBytes(), dst); err != nil {
		s.log.Warn("dhcp: send reply", "mac", req.ClientHWAddr.String(), "type", reply.MessageType().String(), "to", dst.String(), "err", err)
		return
	}
	s.log.Info("dhcp", "mac", req.ClientHWAddr.String(), "host", req.HostName(), "got", reply.MessageType().String(), "addr", reply.YourIPAddr.String())
}
