package aqm

import (
	"fmt"
	"time"
)

// Tune derives target, tupdate and the netlink alpha/beta from RTTs as
// tc-dualpi2's max_rtt / typical_rtt do (RFC 9332 App. A.1 relations).
// Times are ns; 0 means "not given", at least one must be. Like tc, the
// RTTs are taken in whole µs:
//
//	typical_rtt missing: max(max_rtt/6, 1 µs); max_rtt missing: 6·typical_rtt
//	target  = typical_rtt
//	tupdate = max(min(typical_rtt, max_rtt/3), 1 µs)
//	alpha   = 0.1·tupdate/max_rtt²,  beta = 0.3/max_rtt   (Hz; C float constants)
//	netlink = trunc(256·x), which must be in 1..2^31−1
//
// typical_rtt > max_rtt is rejected. Example: max_rtt 300 ms gives 50 ms,
// 50 ms, alpha 14 (tc shows 0.050781), beta 256 (0.996094).
func Tune(maxRTT, typicalRTT int64) (target, tupdate int64, alpha, beta uint32, err error) {
	if maxRTT < 0 || typicalRTT < 0 {
		return 0, 0, 0, 0, fmt.Errorf("tune: max_rtt %v, typical_rtt %v: RTTs must not be negative",
			time.Duration(maxRTT), time.Duration(typicalRTT))
	}
	maxUs, typUs := maxRTT/1000, typicalRTT/1000
	switch {
	case maxRTT == 0 && typicalRTT == 0:
		return 0, 0, 0, 0, fmt.Errorf("tune: give max_rtt or typical_rtt (or both)")
	case maxRTT != 0 && maxUs == 0:
		return 0, 0, 0, 0, fmt.Errorf("tune: max_rtt %v: must be at least 1µs", time.Duration(maxRTT))
	case typicalRTT != 0 && typUs == 0:
		return 0, 0, 0, 0, fmt.Errorf("tune: typical_rtt %v: must be at least 1µs", time.Duration(typicalRTT))
	case maxUs == 0:
		maxUs = 6 * typUs
	case typUs == 0:
		typUs = max(maxUs/6, 1)
	}
	if typUs > maxUs {
		return 0, 0, 0, 0, fmt.Errorf("tune: typical_rtt %v > max_rtt %v: the typical RTT cannot exceed the maximum",
			time.Duration(typUs*1000), time.Duration(maxUs*1000))
	}
	tupdUs := max(min(typUs, maxUs/3), 1)
	maxS, tupdS := float64(maxUs)/1e6, float64(tupdUs)/1e6
	alphaHz := float64(float32(0.1)) * tupdS / (maxS * maxS)
	betaHz := float64(float32(0.3)) / maxS
	if alpha, err = gainToNetlink("alpha", alphaHz); err != nil {
		return 0, 0, 0, 0, err
	}
	if beta, err = gainToNetlink("beta", betaHz); err != nil {
		return 0, 0, 0, 0, err
	}
	return typUs * 1000, tupdUs * 1000, alpha, beta, nil
}

// gainToNetlink truncates a gain in Hz to Hz·256 and checks the netlink range.
func gainToNetlink(name string, hz float64) (uint32, error) {
	v := hz * (1 << alphaBetaShift)
	if v < 1 || v > maxAlphaBeta {
		return 0, fmt.Errorf("tune: %s %g Hz is outside %g..%g Hz (netlink 1..%d in 1/256 Hz): choose other RTTs",
			name, hz, 1.0/(1<<alphaBetaShift), float64(maxAlphaBeta)/(1<<alphaBetaShift), maxAlphaBeta)
	}
	return uint32(v), nil
}
