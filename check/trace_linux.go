package check

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pi2hop/pi2hop/flow/ecnudp"
)

// RunTrace sends probes with rising TTL towards the responder, one hop at
// a time, and reads the ICMP time-exceeded messages the routers send back
// on a raw socket: each quotes the IP header of the probe as it arrived
// there (RFC 792, RFC 4443 §3.3), so the ECN field each router saw. The
// responder's echo reports the field at the end. A socket option
// (IP_RECVERR) would name the routers without root, but the kernel hands
// over only the quoted payload, not the quoted header with its ECN field,
// so the trace needs a raw socket: root or CAP_NET_RAW.
func RunTrace(ctx context.Context, o TraceOptions) (*Trace, error) {
	v6 := o.Peer.Addr().Is6()
	fam, proto := unix.AF_INET, unix.IPPROTO_ICMP
	if v6 {
		fam, proto = unix.AF_INET6, unix.IPPROTO_ICMPV6
	}
	raw, err := unix.Socket(fam, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("--trace needs root or CAP_NET_RAW: a raw ICMP socket reads what each router quotes of the probe")
		}
		return nil, fmt.Errorf("raw ICMP socket: %w", err)
	}
	defer unix.Close(raw)
	udp, err := unix.Socket(fam, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return nil, err
	}
	defer unix.Close(udp)
	if err := unix.Connect(udp, sockaddr(o.Peer)); err != nil {
		return nil, fmt.Errorf("connect to %v: %w", o.Peer, err)
	}
	sa, err := unix.Getsockname(udp)
	if err != nil {
		return nil, err
	}
	local := addrPort(sa)

	t := &Trace{Peer: o.Peer, Sent: o.Sent}
	session := uint32(time.Now().UnixNano())
	tos := ProbeDSCP<<2 | uint8(o.Sent&3)
	oob := ecnudp.AppendTOS(nil, o.Peer, tos)
	buf := make([]byte, 2048)
	silent := 0
	seq := uint16(0)
	for ttl := 1; ttl <= o.MaxHops && !t.Reached && silent < maxSilent; ttl++ {
		if err := setTTL(udp, v6, ttl); err != nil {
			return nil, err
		}
		hop := Hop{N: ttl, Silent: true}
	tries:
		for range o.Tries {
			seq++
			b := appendMsg(nil, msg{typ: typeProbe, session: session, seq: seq, sentTOS: tos, echoECN: 0})
			sent := time.Now()
			if err := unix.Sendmsg(udp, b, oob, nil, 0); err != nil && !errors.Is(err, unix.ECONNREFUSED) {
				return nil, fmt.Errorf("send: %w", err)
			}
			deadline := sent.Add(o.Wait)
			for {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				wait := time.Until(deadline)
				if wait <= 0 {
					break
				}
				fds := []unix.PollFd{{Fd: int32(raw), Events: unix.POLLIN}, {Fd: int32(udp), Events: unix.POLLIN}}
				if _, err := unix.Poll(fds, int(min(wait, 100*time.Millisecond)/time.Millisecond)+1); err != nil && err != unix.EINTR {
					return nil, fmt.Errorf("poll: %w", err)
				}
				if fds[1].Revents != 0 {
					n, _, err := unix.Recvfrom(udp, buf, unix.MSG_DONTWAIT)
					if err == nil {
						if m, err := parseMsg(buf[:n]); err == nil && m.typ == typeEcho && m.session == session && m.seq == seq && m.flags&flagTOS != 0 {
							hop = Hop{N: ttl, Addr: o.Peer.Addr(), Responder: true, TOS: m.arrivedTOS, RTT: time.Since(sent)}
							t.Reached = true
							break tries
						}
					}
				}
				if fds[0].Revents != 0 {
					n, from, err := unix.Recvfrom(raw, buf, unix.MSG_DONTWAIT)
					if err != nil {
						continue
					}
					q, ok := parseICMP(buf[:n], v6)
					if !ok || q.dst != o.Peer || q.src.Port() != local.Port() || (q.hasSeq && (q.seq != seq || q.session != session)) {
						continue
					}
					hop = Hop{N: ttl, Addr: addrPort(from).Addr(), TOS: q.tos, RTT: time.Since(sent)}
					if q.unreachable {
						// The destination itself refuses the probe: its
						// quote is the field as it arrived there.
						hop.Responder = true
						t.Reached = true
					}
					break tries
				}
			}
		}
		if hop.Silent {
			silent++
		} else {
			silent = 0
		}
		t.Hops = append(t.Hops, hop)
	}
	t.find()
	return t, nil
}

func setTTL(fd int, v6 bool, ttl int) error {
	if v6 {
		return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, ttl)
	}
	return unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TTL, ttl)
}

func sockaddr(ap netip.AddrPort) unix.Sockaddr {
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}
	}
	return &unix.SockaddrInet6{Addr: ap.Addr().As16(), Port: int(ap.Port())}
}

func addrPort(sa unix.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port))
	}
	return netip.AddrPort{}
}

// quote is what an ICMP error says about the probe it quotes.
type quote struct {
	src, dst    netip.AddrPort
	tos         uint8
	unreachable bool // destination unreachable rather than time exceeded
	hasSeq      bool // enough of the payload is quoted to read the probe's
	session     uint32
	seq         uint16
}

// parseICMP reads an ICMP time-exceeded or destination-unreachable
// message quoting a UDP datagram: for IPv4 as a raw socket returns it
// (the outer IPv4 header first), for IPv6 without the outer header.
func parseICMP(b []byte, v6 bool) (quote, bool) {
	var q quote
	if !v6 {
		if len(b) < 20 || b[0]>>4 != 4 {
			return q, false
		}
		b = b[int(b[0]&0x0f)*4:]
	}
	if len(b) < 8 {
		return q, false
	}
	typ := b[0]
	switch {
	case !v6 && typ == 11, v6 && typ == 3: // time exceeded
	case !v6 && typ == 3, v6 && typ == 1: // destination unreachable
		q.unreachable = true
	default:
		return q, false
	}
	ip := b[8:]
	var udp []byte
	if !v6 {
		if len(ip) < 20 || ip[0]>>4 != 4 || ip[9] != unix.IPPROTO_UDP {
			return q, false
		}
		ihl := int(ip[0]&0x0f) * 4
		if len(ip) < ihl+8 {
			return q, false
		}
		q.tos = ip[1]
		src, dst := netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20]))
		udp = ip[ihl:]
		q.src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(udp[0:]))
		q.dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(udp[2:]))
	} else {
		// Probes carry no extension headers: UDP follows the fixed header.
		if len(ip) < 48 || ip[0]>>4 != 6 || ip[6] != unix.IPPROTO_UDP {
			return q, false
		}
		q.tos = ip[0]<<4 | ip[1]>>4
		src, dst := netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40]))
		udp = ip[40:]
		q.src = netip.AddrPortFrom(src, binary.BigEndian.Uint16(udp[0:]))
		q.dst = netip.AddrPortFrom(dst, binary.BigEndian.Uint16(udp[2:]))
	}
	if payload := udp[8:]; len(payload) >= headerSize+2 && string(payload[:4]) == magic && payload[4] == typeProbe {
		q.hasSeq, q.session, q.seq = true, binary.BigEndian.Uint32(payload[5:9]), binary.BigEndian.Uint16(payload[9:11])
	}
	return q, true
}
