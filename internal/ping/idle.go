package ping

import (
	"net/netip"
	"time"

	"github.com/pi2hop/pi2hop/internal/hoststeal"
)

// Idle is an idle-RTT measurement: the median of N round trips and what
// the host took from the machine while they were timed.
type Idle struct {
	Median time.Duration
	N      int
	// Steal is the host's steal over the pings, all CPUs summed
	// (hoststeal.Total), -1 where it cannot be read.
	Steal time.Duration
}

// Measure is Median with the host's steal read around it.
func Measure(ns string, dst netip.Addr, n int, gap time.Duration) (Idle, error) {
	s0 := hoststeal.Total()
	rtt, err := Median(ns, dst, n, gap)
	m := Idle{Median: rtt, N: n, Steal: -1}
	if s1 := hoststeal.Total(); s0 >= 0 && s1 >= s0 {
		m.Steal = s1 - s0
	}
	return m, err
}

// StealAllowance is the most the host's steal can have raised the
// median. The round trips do not overlap (each ping waits for its reply
// before the next is sent), and for the median of N of them to rise by
// x more than half must each have waited x for a CPU the host had taken,
// so the host took at least N/2·x: x ≤ 2·steal/N, with steal read up to
// the tick it rounds off. 0 when no steal was seen or it is unknown.
func (m Idle) StealAllowance() time.Duration {
	if m.Steal <= 0 || m.N < 1 {
		return 0
	}
	return 2 * (m.Steal + hoststeal.Tick) / time.Duration(m.N)
}
