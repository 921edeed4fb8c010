package check

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/flow/ecnudp"
)

// Responder limits: sessions are forgotten after sessionIdle without a
// message, and at most maxSessions are kept (a new one beyond is not
// answered until an old one expires).
const (
	sessionIdle = time.Minute
	maxSessions = 1024
)

type sessionKey struct {
	from netip.AddrPort
	id   uint32
}

// session is what the responder counted of one client's run.
type session struct {
	arrived, tosZero [4][4]uint16
	echoes           [4]uint16
	ttlMin, ttlMax   uint8
	last             time.Time
}

// Responder answers clients on one socket. Make it with NewResponder.
type Responder struct {
	conn     *net.UDPConn
	sessions map[sessionKey]*session
	buf, oob []byte
	out      []byte
	cmsg     []byte
	ctx      context.Context // Serve's, which loads end with
	loadMu   sync.Mutex
	loads    map[sessionKey]*responderLoad
	finished map[sessionKey][2][4]uint32 // what ended loads' flows arrived as
	loadWG   sync.WaitGroup
	// Dropped counts datagrams that were not check messages or not
	// answerable (malformed, too short, no room for a session).
	Dropped int
}

// NewResponder prepares conn: the ECN field, TOS byte and TTL of every
// datagram it receives are attached to it.
func NewResponder(conn *net.UDPConn) (*Responder, error) {
	if err := ecnudp.EnableReceive(conn); err != nil {
		return nil, err
	}
	if err := ecnudp.EnableTTL(conn); err != nil {
		return nil, err
	}
	return &Responder{conn: conn, sessions: map[sessionKey]*session{}, loads: map[sessionKey]*responderLoad{}, finished: map[sessionKey][2][4]uint32{},
		buf: make([]byte, 2048), oob: make([]byte, ecnudp.OOBSize)}, nil
}

// Serve answers until ctx ends. It returns nil then, or the socket's error.
// The loads it sinks end with it.
func (r *Responder) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { r.conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	r.ctx = ctx
	defer r.loadWG.Wait()
	defer cancel()
	for {
		n, oobn, _, from, err := r.conn.ReadMsgUDPAddrPort(r.buf, r.oob)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue
			}
			return err
		}
		if err := r.handle(r.buf[:n], ecnudp.ParseControl(r.oob[:oobn]), from, time.Now()); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// handle answers one datagram; the error is the socket's.
func (r *Responder) handle(b []byte, c ecnudp.Control, from netip.AddrPort, now time.Time) error {
	m, err := parseMsg(b)
	if err != nil || m.typ == typeHelloAck || m.typ == typeEcho || m.typ == typeSummary || m.typ == typeLoadAck || m.typ == typeLoadReport {
		r.Dropped++
		return nil
	}
	s := r.session(sessionKey{from, m.session}, now)
	if s == nil {
		r.Dropped++
		return nil
	}
	reply := msg{session: m.session}
	tos := uint8(0)
	switch m.typ {
	case typeHello:
		reply.typ = typeHelloAck
	case typeLoad:
		d := time.Duration(m.loadMs) * time.Millisecond
		reply.typ, reply.loadMs, reply.ports = typeLoadAck, m.loadMs, r.startLoad(sessionKey{from, m.session}, d)
	case typeLoadReportReq:
		arrived, ok := r.loadReport(sessionKey{from, m.session})
		if !ok {
			return nil // not over yet: the client asks again
		}
		reply.typ, reply.loadArrived = typeLoadReport, arrived
	case typeSummaryReq:
		reply.typ = typeSummary
		reply.arrived, reply.tosZero, reply.echoes = s.arrived, s.tosZero, s.echoes
		reply.ttlMin, reply.ttlMax = s.ttlMin, s.ttlMax
	case typeProbe:
		sent, got := aqm.ECN(m.sentTOS&3), c.ECN
		if c.HasECN {
			s.arrived[sent][got] = sat(s.arrived[sent][got])
			if c.TOS == 0 {
				s.tosZero[sent][got] = sat(s.tosZero[sent][got])
			}
		}
		if c.HasTTL {
			if s.ttlMin == 0 || c.TTL < s.ttlMin {
				s.ttlMin = c.TTL
			}
			s.ttlMax = max(s.ttlMax, c.TTL)
		}
		tos = ProbeDSCP<<2 | uint8(m.echoECN&3)
		s.echoes[m.echoECN&3] = sat(s.echoes[m.echoECN&3])
		reply.typ, reply.seq, reply.sentTOS, reply.echoTOS = typeEcho, m.seq, m.sentTOS, tos
		reply.arrivedTOS, reply.arrivedTTL = c.TOS, c.TTL
		if c.HasECN {
			reply.flags |= flagTOS
		}
		if c.HasTTL {
			reply.flags |= flagTTL
		}
	}
	if len(b) < size(reply.typ) {
		r.Dropped++ // never send more than was sent
		return nil
	}
	r.out = appendMsg(r.out[:0], reply)
	r.cmsg = ecnudp.AppendTOS(r.cmsg[:0], from, tos)
	_, _, err = r.conn.WriteMsgUDPAddrPort(r.out, r.cmsg, from)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		// An unreachable client (ICMP error of an earlier echo, a
		// route gone) is that client's problem, not the responder's.
		return nil
	}
	return err
}

// session returns the state of key, making it when there is room.
func (r *Responder) session(key sessionKey, now time.Time) *session {
	if s := r.sessions[key]; s != nil {
		s.last = now
		return s
	}
	if len(r.sessions) >= maxSessions {
		for k, s := range r.sessions {
			if now.Sub(s.last) > sessionIdle {
				delete(r.sessions, k)
			}
		}
		if len(r.sessions) >= maxSessions {
			return nil
		}
	}
	s := &session{last: now}
	r.sessions[key] = s
	return s
}

// sat adds one to a counter that stops at its maximum.
func sat(n uint16) uint16 {
	if n == 0xffff {
		return n
	}
	return n + 1
}
