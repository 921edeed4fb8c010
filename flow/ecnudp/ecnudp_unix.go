//go:build linux || darwin || freebsd

package ecnudp

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/pi2hop/pi2hop/aqm"
)

// The socket options are those of RFC 3542 (IPv6) and their IPv4
// counterparts, which Linux, macOS and FreeBSD share; what differs (the
// receive time's option, the IPv4 control messages' type and size, the
// precise wait) is in each system's file.

// Supported says this system has the ECN socket options the package uses.
const Supported = true

// control runs f on c's file descriptor.
func control(c *net.UDPConn, f func(fd int) error) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// EnableReceive asks the kernel to attach each datagram's ECN field and
// the time it received the datagram (stampOpt).
func EnableReceive(c *net.UDPConn) error {
	return control(c, func(fd int) error {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, stampOpt, 1); err != nil {
			return fmt.Errorf("setsockopt %s: %w", stampOptName, err)
		}
		fam, err := family(fd)
		if err != nil {
			return err
		}
		if fam == unix.AF_INET6 {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1); err != nil {
				return fmt.Errorf("setsockopt IPV6_RECVTCLASS: %w", err)
			}
			// IPv4-mapped datagrams on a dual-stack socket; fails on a
			// v6-only socket, where it is not needed.
			_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
			return nil
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVTOS, 1); err != nil {
			return fmt.Errorf("setsockopt IP_RECVTOS: %w", err)
		}
		return nil
	})
}

// EnableTTL asks the kernel to attach to each datagram the IPv4 TTL or
// IPv6 hop limit it arrived with (ParseControl reads it), which tells how
// many routers it crossed.
func EnableTTL(c *net.UDPConn) error {
	return control(c, func(fd int) error {
		fam, err := family(fd)
		if err != nil {
			return err
		}
		if fam == unix.AF_INET6 {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT, 1); err != nil {
				return fmt.Errorf("setsockopt IPV6_RECVHOPLIMIT: %w", err)
			}
			_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVTTL, 1) // IPv4-mapped peers
			return nil
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVTTL, 1); err != nil {
			return fmt.Errorf("setsockopt IP_RECVTTL: %w", err)
		}
		return nil
	})
}

// SetECN sets the codepoint of every datagram c sends from now on. The
// DSCP bits of the TOS byte are cleared.
func SetECN(c *net.UDPConn, e aqm.ECN) error {
	v := int(e & 3)
	return control(c, func(fd int) error {
		fam, err := family(fd)
		if err != nil {
			return err
		}
		if fam == unix.AF_INET6 {
			if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, v); err != nil {
				return fmt.Errorf("setsockopt IPV6_TCLASS %d: %w", v, err)
			}
			_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, v) // IPv4-mapped peers
			return nil
		}
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, v); err != nil {
			return fmt.Errorf("setsockopt IP_TOS %d: %w", v, err)
		}
		return nil
	})
}

// ParseECN returns the ECN field from the control messages of one
// datagram; ok is false when there is none (EnableReceive not called).
func ParseECN(oob []byte) (e aqm.ECN, ok bool) {
	c := ParseControl(oob)
	return c.ECN, c.HasECN
}

// ParseControl reads the ECN field and the kernel's receive time from the
// control messages of one datagram.
func ParseControl(oob []byte) Control {
	var c Control
	// Walk the cmsgs by hand: unix.ParseSocketControlMessage allocates.
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		n := int(h.Len)
		if n < unix.SizeofCmsghdr || n > len(oob) {
			return c
		}
		data := oob[unix.CmsgLen(0):n]
		switch {
		case h.Level == unix.IPPROTO_IP && h.Type == recvTOSType && len(data) >= 1:
			c.TOS, c.HasECN = data[0], true
			c.ECN = aqm.ECN(c.TOS & 3)
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_TCLASS && len(data) >= 4:
			c.TOS, c.HasECN = uint8(binary.NativeEndian.Uint32(data)), true
			c.ECN = aqm.ECN(c.TOS & 3)
		case h.Level == unix.IPPROTO_IP && h.Type == recvTTLType && len(data) >= 1:
			c.TTL, c.HasTTL = ttlByte(data), true
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_HOPLIMIT && len(data) >= 4:
			c.TTL, c.HasTTL = uint8(binary.NativeEndian.Uint32(data)), true
		case h.Level == unix.SOL_SOCKET && h.Type == stampType:
			if at, ok := stampNano(data); ok {
				c.Arrival = at
			}
		}
		next := unix.CmsgSpace(n - unix.CmsgLen(0))
		if next > len(oob) {
			break
		}
		oob = oob[next:]
	}
	return c
}

// AppendCmsg appends a control message that sends one datagram to a peer
// at to with codepoint e, overriding the socket's setting (for
// WriteMsgUDPAddrPort). The traffic class is a 4-byte int (RFC 3542); the
// IPv4 TOS value is as long as the system takes it (sendTOSLen).
func AppendCmsg(b []byte, to netip.AddrPort, e aqm.ECN) []byte {
	return AppendTOS(b, to, uint8(e&3))
}

// AppendTOS is AppendCmsg with the whole TOS / traffic class byte: DSCP in
// the upper six bits, ECN in the lower two.
func AppendTOS(b []byte, to netip.AddrPort, tos uint8) []byte {
	level, typ, size := unix.IPPROTO_IP, unix.IP_TOS, sendTOSLen
	if to.Addr().Is6() && !to.Addr().Is4In6() {
		level, typ, size = unix.IPPROTO_IPV6, unix.IPV6_TCLASS, 4
	}
	start := len(b)
	b = append(b, make([]byte, unix.CmsgSpace(size))...)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[start]))
	h.Level = int32(level)
	h.Type = int32(typ)
	h.SetLen(unix.CmsgLen(size))
	data := b[start+unix.CmsgLen(0):]
	if size == 1 {
		data[0] = tos
	} else {
		binary.NativeEndian.PutUint32(data, uint32(tos))
	}
	return b
}

// Waiter waits for a socket to become readable with the precision of a
// high-resolution timer where the system has one (Linux's ppoll), not
// the millisecond of Go's netpoller. Use it
// from one goroutine; call Precise once from the goroutine that waits.
type Waiter struct {
	c   *net.UDPConn
	fds [1]unix.PollFd
}

// NewWaiter returns a Waiter for c.
func NewWaiter(c *net.UDPConn) *Waiter { return &Waiter{c: c} }

// TryReadMsg is TryRead with the datagram's control messages (the ECN
// field, after EnableReceive) in oob, oobn bytes of them.
func (w *Waiter) TryReadMsg(buf, oob []byte) (n, oobn int, from netip.AddrPort, ok bool, err error) {
	err = control(w.c, func(fd int) error {
		for {
			var sa unix.Sockaddr
			var rerr error
			n, oobn, _, sa, rerr = unix.Recvmsg(fd, buf, oob, unix.MSG_DONTWAIT)
			switch {
			case rerr == unix.EINTR:
				continue
			case rerr == unix.EAGAIN:
				return nil
			case rerr == unix.ECONNREFUSED || rerr == unix.EHOSTUNREACH || rerr == unix.ENETUNREACH:
				continue // an ICMP error for an earlier datagram: skip it
			case rerr != nil:
				return fmt.Errorf("recvmsg: %w", rerr)
			}
			ok = true
			from = addrPort(sa)
			return nil
		}
	})
	return n, oobn, from, ok, err
}

// addrPort converts a socket address to an AddrPort (invalid for other
// families).
func addrPort(sa unix.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr), uint16(a.Port))
	}
	return netip.AddrPort{}
}

// TryRead reads one waiting datagram without blocking; ok is false when
// none is waiting. (It bypasses the netpoller, whose read deadlines would
// refuse to read at all once passed.)
func (w *Waiter) TryRead(buf []byte) (n int, from netip.AddrPort, ok bool, err error) {
	n, _, from, ok, err = w.TryReadMsg(buf, nil)
	return n, from, ok, err
}
