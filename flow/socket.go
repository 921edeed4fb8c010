package flow

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/pi2hop/pi2hop/aqm"
)

// InputError is an address or mode an endpoint cannot use. Option is the
// setting it came in (to, bind, listen, ecn: spelled as the CLI's flags),
// Value what was given ("" with Missing), Want the accepted form.
type InputError struct {
	Option, Value, Want string
	Missing             bool
}

func (e *InputError) Error() string {
	if e.Missing {
		return fmt.Sprintf("%s is required: %s", e.Option, e.Want)
	}
	return fmt.Sprintf("%s %q: want %s", e.Option, e.Value, e.Want)
}

// CheckECN accepts the two modes the Prague and video ends have: l4s or
// classic, spelled out (the CLI always passes one).
func CheckECN(mode string) error {
	if mode != ECNL4S && mode != ECNClassic {
		return &InputError{Option: "ecn", Value: mode, Want: ECNL4S + " or " + ECNClassic}
	}
	return nil
}

// probeECN maps a probe's mode to the codepoint it sends.
var probeECN = map[string]aqm.ECN{
	"l4s": aqm.ECT1, "ect1": aqm.ECT1, "classic": aqm.NotECT, "not-ect": aqm.NotECT, "ect0": aqm.ECT0, "ce": aqm.CE,
}

// ParseProbeECN reads a probe's codepoint, case-insensitively: l4s (or
// ect1), classic (or not-ect), ect0 or ce.
func ParseProbeECN(mode string) (aqm.ECN, error) {
	e, ok := probeECN[strings.ToLower(mode)]
	if !ok {
		return 0, &InputError{Option: "ecn", Value: mode, Want: "l4s, classic, ect0 or ce"}
	}
	return e, nil
}

// DialUDP resolves to (host names too) and opens an unconnected socket on
// the peer's address family, bound to bind if given. The peer comes back
// with a 4-in-6 address unmapped, so IPv4 peers match the replies' source.
func DialUDP(to, bind string) (*net.UDPConn, netip.AddrPort, error) {
	if to == "" {
		return nil, netip.AddrPort{}, &InputError{Option: "to", Missing: true, Want: "the receiver's ADDR:PORT"}
	}
	ra, err := net.ResolveUDPAddr("udp", to)
	if err != nil || ra.Port == 0 {
		return nil, netip.AddrPort{}, &InputError{Option: "to", Value: to, Want: "ADDR:PORT with a port, like 10.0.0.2:8080 or [::1]:8080"}
	}
	peer := ra.AddrPort()
	peer = netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
	network := "udp6"
	if peer.Addr().Is4() {
		network = "udp4"
	}
	var la *net.UDPAddr
	if bind != "" {
		if la, err = net.ResolveUDPAddr(network, bind); err != nil {
			return nil, peer, &InputError{Option: "bind", Value: bind, Want: "ADDR:PORT of the " + network + " family"}
		}
	}
	c, err := net.ListenUDP(network, la)
	return c, peer, err
}

// ListenUDP opens the socket a receiving end (or the probe's server)
// reads from.
func ListenUDP(listen string) (*net.UDPConn, error) {
	if listen == "" {
		return nil, &InputError{Option: "listen", Missing: true, Want: "the local ADDR:PORT, like :8080"}
	}
	la, err := net.ResolveUDPAddr("udp", listen)
	if err != nil {
		return nil, &InputError{Option: "listen", Value: listen, Want: "ADDR:PORT, like :8080 or [::]:8080"}
	}
	return net.ListenUDP("udp", la)
}
