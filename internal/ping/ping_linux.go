package ping

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/figure"
	"github.com/pi2hop/pi2hop/netsys"
	"golang.org/x/sys/unix"
)

// Median sends n ICMP echo requests (ICMPv4, or ICMPv6 to an IPv6
// dst), gap apart, from network namespace ns ("" = the one the process
// started in) to dst and returns the median round-trip time (nearest-rank
// p50, figure.Quantile): the idle RTT of a path, for tests and benchmarks.
//
// Like ping(8) it times a reply by its kernel receive timestamp
// (SO_TIMESTAMPNS), so the caller's own wake-up after the reply arrived,
// through the Go netpoller and no part of the path, is not counted.
func Median(ns string, dst netip.Addr, n int, gap time.Duration) (time.Duration, error) {
	if !dst.IsValid() || dst.Is4In6() || n < 1 {
		return 0, fmt.Errorf("ping: %v %d times: want an IPv4 or IPv6 address and n >= 1", dst, n)
	}
	// Echo request and reply types: RFC 792's 8 and 0, RFC 4443's 128
	// and 129. The kernel computes an ICMPv6 raw socket's checksum
	// (RFC 3542 section 3.1) and strips the IPv6 header from what it reads.
	network, laddr, echo, reply := "ip4:icmp", "0.0.0.0", byte(8), byte(0)
	if dst.Is6() {
		network, laddr, echo, reply = "ip6:ipv6-icmp", "::", 128, 129
	}
	var c *net.IPConn
	if err := netsys.Do(ns, func() error {
		pc, err := net.ListenPacket(network, laddr)
		if err != nil {
			return err
		}
		c = pc.(*net.IPConn)
		return setTimestamps(c)
	}); err != nil {
		if c != nil {
			c.Close()
		}
		return 0, fmt.Errorf("ping: socket: %w", err)
	}
	defer c.Close()
	id := uint16(os.Getpid())
	rtts := make([]time.Duration, 0, n)
	req, buf, oob := make([]byte, 64), make([]byte, 1500), make([]byte, 128)
	for i := 0; i < n; i++ {
		// Echo request: type, code 0, checksum, id, sequence.
		clear(req)
		req[0] = echo
		binary.BigEndian.PutUint16(req[4:], id)
		binary.BigEndian.PutUint16(req[6:], uint16(i))
		if dst.Is4() {
			binary.BigEndian.PutUint16(req[2:], aqm.Checksum(req))
		}
		start := time.Now()
		if _, err := c.WriteTo(req, &net.IPAddr{IP: dst.AsSlice()}); err != nil {
			return 0, fmt.Errorf("ping: %v: %w", dst, err)
		}
		c.SetReadDeadline(time.Now().Add(time.Second))
		for {
			m, oobn, _, _, err := c.ReadMsgIP(buf, oob)
			if err != nil {
				return 0, fmt.Errorf("ping: %v, reply %d: %w", dst, i, err)
			}
			icmp := buf[:m]
			if dst.Is4() && m > 0 && buf[0]>>4 == 4 { // ReadMsgIP keeps the IPv4 header
				icmp = buf[min(int(buf[0]&15)*4, m):m]
			}
			if len(icmp) < 8 || icmp[0] != reply || binary.BigEndian.Uint16(icmp[4:]) != id ||
				binary.BigEndian.Uint16(icmp[6:]) != uint16(i) {
				continue
			}
			at, err := rxTimestamp(oob[:oobn])
			if err != nil {
				return 0, err
			}
			rtts = append(rtts, at.Sub(start))
			break
		}
		time.Sleep(gap)
	}
	slices.Sort(rtts)
	return figure.Quantile(rtts, 0.5), nil
}

func setTimestamps(c *net.IPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return err
	}
	return serr
}

// rxTimestamp returns the time in an SO_TIMESTAMPNS control message.
func rxTimestamp(oob []byte) (time.Time, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, err
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
			// struct timespec: two 64-bit fields on 64-bit Linux.
			sec := int64(binary.NativeEndian.Uint64(m.Data))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:]))
			return time.Unix(sec, nsec), nil
		}
	}
	return time.Time{}, errors.New("ping: reply without a receive timestamp")
}
