package aqm

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Config holds every sch_dualpi2 parameter, in the kernel's units inside
// (ns for times) and tc's names in comments. DefaultConfig gives the
// kernel's defaults; New and Validate reject what the kernel would.
type Config struct {
	Limit             uint32 // limit: packets in both queues
	MemLimit          uint64 // memlimit: bytes of queued packet data
	Target            int64  // target: PI target queue delay, ns
	Tupdate           int64  // tupdate: PI update interval, ns
	Alpha             uint32 // alpha: integral gain, Hz·256 (netlink units; 41 ≙ 0.16 Hz)
	Beta              uint32 // beta: proportional gain, Hz·256 (819 ≙ 3.2 Hz)
	Coupling          uint8  // coupling_factor k
	StepThresh        int64  // step_thresh: ns, or packets when StepInPackets
	StepInPackets     bool   // step_thresh given as Np
	MinQlenStep       uint32 // min_qlen_step: packets
	DropOverload      bool   // drop_on_overload (true) or overflow (false)
	DropEnqueue       bool   // drop_enqueue (true) or drop_dequeue (false)
	ClassicProtection uint8  // classic_protection: C-queue WRR weight, %
	ECNMask           uint8  // 1 = l4s_ect (ECT(1), CE), 3 = any_ect
	MTU               int    // bytes; the 2-MTU guard and the WRR credit use it
	// NQB sorts packets with DSCP 45 into the L-queue whatever their ECN
	// codepoint (RFC 9956 §5.2: a DualQ may give NQB traffic the
	// low-latency queue), under the L-queue's AQM like L4S packets, so a
	// Not-ECT NQB packet is dropped where an ECT one would be marked. In
	// Linux this takes a tc filter setting the class; here it is a flag.
	NQB bool
}

// Kinds of queue discipline NewQueue builds, named as tc names the qdisc.
const (
	KindDualPI2 = "dualpi2"
	KindFIFO    = "fifo"
	KindCoDel   = "codel"
	KindPIE     = "pie"
	KindFQCodel = "fq_codel"
	KindDOCSIS  = "docsis"
)

// Kinds lists every kind, in the order help texts show them.
var Kinds = []string{KindDualPI2, KindFIFO, KindCoDel, KindPIE, KindFQCodel, KindDOCSIS}

// FIFOConfig sizes the tail-drop FIFO, the "no L4S queue management"
// baseline. A zero limit means no limit of that kind; at least one must be set.
type FIFOConfig struct {
	Limit     uint32 // packets
	ByteLimit uint64 // bytes of packet data
}

// Spec names a queue discipline and its configuration: what flags give for
// one direction and what NewQueue builds. Only the field of Kind is used.
type Spec struct {
	Kind    string // one of Kinds
	DualPI2 Config
	FIFO    FIFOConfig
	CoDel   CodelConfig
	PIE     PIEConfig
	FQCodel FQCodelConfig
	DOCSIS  DOCSISConfig
}

// DefaultSpec returns the kernel defaults of a kind (ok false for an
// unknown kind).
func DefaultSpec(kind string) (Spec, bool) {
	s := Spec{Kind: kind}
	switch kind {
	case KindDualPI2:
		s.DualPI2 = DefaultConfig()
	case KindFIFO:
		s.FIFO = FIFOConfig{Limit: DefaultLimit}
	case KindCoDel:
		s.CoDel = DefaultCodelConfig()
	case KindPIE:
		s.PIE = DefaultPIEConfig()
	case KindFQCodel:
		s.FQCodel = DefaultFQCodelConfig()
	case KindDOCSIS:
		s.DOCSIS = DefaultDOCSISConfig()
	default:
		return s, false
	}
	return s, true
}

// UnknownKindError is a Spec whose Kind is none of Kinds.
type UnknownKindError struct{ Kind string }

func (e *UnknownKindError) Error() string {
	return fmt.Sprintf("queue kind %q: want one of %s", e.Kind, strings.Join(Kinds, ", "))
}

// Validate checks the configuration of s's kind; an unknown kind is an
// *UnknownKindError, a parameter out of range a *ConfigError (the FIFO's
// missing limit a plain error).
func (s Spec) Validate() error {
	switch s.Kind {
	case KindDualPI2:
		return s.DualPI2.Validate()
	case KindFIFO:
		return s.FIFO.Validate()
	case KindCoDel:
		return s.CoDel.Validate()
	case KindPIE:
		return s.PIE.Validate()
	case KindFQCodel:
		return s.FQCodel.Validate()
	case KindDOCSIS:
		return s.DOCSIS.Validate()
	}
	return &UnknownKindError{s.Kind}
}

// Limit is the most packets a queue of this Spec can hold at once, for
// sizing packet buffers: its packet limit (a byte limit alone counts
// 64-byte packets), plus for fq_codel a drop batch whose packets are
// handed back by the following dequeues.
func (s Spec) Limit() int {
	switch s.Kind {
	case KindDualPI2:
		return int(s.DualPI2.Limit)
	case KindFIFO:
		if s.FIFO.Limit > 0 {
			return int(s.FIFO.Limit)
		}
		return int(min(s.FIFO.ByteLimit/64, math.MaxInt32))
	case KindCoDel:
		return int(s.CoDel.Limit)
	case KindPIE:
		return int(s.PIE.Limit)
	case KindFQCodel:
		return int(s.FQCodel.Limit) + int(s.FQCodel.DropBatch)
	case KindDOCSIS:
		return int(s.DOCSIS.DualPI2.Limit)
	}
	return 0
}

// LiveChange reports whether a running queue of s's kind can take the
// configuration next (tc qdisc change): same kind, and for the FIFO the
// same limits; fq_codel's flow count is fixed at creation, as the kernel's.
func (s Spec) LiveChange(next Spec) error {
	if next.Kind != s.Kind {
		return fmt.Errorf("queue kind %s -> %s: the kind cannot change while running (restart instead)", s.Kind, next.Kind)
	}
	switch {
	case s.Kind == KindFIFO && next.FIFO != s.FIFO:
		return errors.New("fifo limits cannot change while running (restart instead)")
	case s.Kind == KindFQCodel && next.FQCodel.Flows != s.FQCodel.Flows:
		return fmt.Errorf("fq_codel flows %d -> %d: the flow count cannot change while running (as in Linux)", s.FQCodel.Flows, next.FQCodel.Flows)
	}
	return next.Validate()
}

// Kernel defaults (dualpi2_reset_default), except the MTU: pi2hop's guard
// and WRR credit use the IP MTU (1500) where the kernel adds the link
// header (1514 on Ethernet).
const (
	DefaultLimit  = 10000 // packets: 125 ms at 1 Gbit/s of 1500-byte packets
	DefaultMTU    = 1500
	DefaultTarget = 15_000_000 // ns
	// DefaultTupdate with the default gains gives a 10 dB stability margin
	// for RTTs up to 100 ms (kernel comment).
	DefaultTupdate    = 16_000_000 // ns
	DefaultAlpha      = 41         // 0.16 Hz·256 (tc shows 0.156250)
	DefaultBeta       = 819        // 3.2 Hz·256 (tc shows 3.195312)
	DefaultStepThresh = 1_000_000  // ns
)

// DefaultConfig returns sch_dualpi2's defaults: limit 10000 packets,
// memlimit limit·2·MTU, target 15 ms, tupdate 16 ms, alpha 0.16, beta 3.2,
// step_thresh 1 ms, min_qlen_step 0, coupling_factor 2, drop_on_overload,
// drop_dequeue, classic_protection 10 %, l4s_ect; MTU 1500.
func DefaultConfig() Config {
	return Config{
		Limit:             DefaultLimit,
		MemLimit:          DefaultMemLimit(DefaultLimit, DefaultMTU),
		Target:            DefaultTarget,
		Tupdate:           DefaultTupdate,
		Alpha:             DefaultAlpha,
		Beta:              DefaultBeta,
		Coupling:          2,
		StepThresh:        DefaultStepThresh,
		MinQlenStep:       0,
		DropOverload:      true,
		DropEnqueue:       false,
		ClassicProtection: 10,
		ECNMask:           1,
		MTU:               DefaultMTU,
	}
}

// DefaultMemLimit is the memory limit the kernel derives whenever limit is
// set: limit·2·MTU (the doubling stands for per-packet overhead), saturated
// at 2^32−1 like the kernel's u32.
func DefaultMemLimit(limit uint32, mtu int) uint64 {
	return min(uint64(limit)*2*uint64(max(mtu, 0)), math.MaxUint32)
}

// Largest values the kernel can hold: times travel in µs in u32 netlink
// attributes; tupdate and step_thresh are kept in ns in a u32 (the kernel
// saturates larger values; Validate rejects them instead, so the
// configuration in force is always the one asked for).
const (
	maxTarget   = math.MaxUint32 * 1000 // ns (u32 µs)
	maxU32Nanos = math.MaxUint32        // ns ≈ 4.29 s
	minMTU      = 68                    // RFC 791 minimum
	maxMTU      = 65535
)

// ConfigError is a parameter outside the range the kernel's netlink policy
// accepts (dualpi2_policy). Field is tc's name of the parameter, so a
// caller can map it to its own (a flag, a JSON key); Value, Min and Max
// are in the unit Unit names.
type ConfigError struct {
	Field           string // tc's name: "coupling", "step_thresh", ...
	Value, Min, Max int64
	Unit            string // UnitNanos (printed as durations), UnitPackets, or "" (a plain number)
}

// Units of a ConfigError.
const (
	UnitNanos   = "ns"
	UnitPackets = "packets"
)

// Error says `config "coupling": 0 not in 1..255`, times as durations
// (`config "tupdate": 10s not in 1µs..4.294967295s`).
func (e *ConfigError) Error() string { return fmt.Sprintf("config %q: %s", e.Field, e.Range()) }

// Range is the error without the field: "0 not in 1..255", for a caller
// that names the field its own way (a flag).
func (e *ConfigError) Range() string {
	switch e.Unit {
	case UnitNanos:
		return fmt.Sprintf("%v not in %v..%v", time.Duration(e.Value), time.Duration(e.Min), time.Duration(e.Max))
	case "":
		return fmt.Sprintf("%d not in %d..%d", e.Value, e.Min, e.Max)
	}
	return fmt.Sprintf("%d not in %d..%d %s", e.Value, e.Min, e.Max, e.Unit)
}

// ranges is Validate's table: every field with the range the kernel
// accepts, as the ConfigError a violation returns.
func (c Config) ranges() []ConfigError {
	step := ConfigError{"step_thresh", c.StepThresh, 0, maxU32Nanos, UnitNanos}
	if c.StepInPackets {
		step = ConfigError{"step_thresh", c.StepThresh, 0, math.MaxUint32, UnitPackets}
	}
	return []ConfigError{
		{"limit", int64(c.Limit), 1, math.MaxUint32, ""},
		{"memlimit", int64(min(c.MemLimit, math.MaxInt64)), 1, math.MaxUint32, ""},
		{"target", c.Target, 0, maxTarget, UnitNanos},
		{"tupdate", c.Tupdate, 1000, maxU32Nanos, UnitNanos},
		{"alpha", int64(c.Alpha), 1, maxAlphaBeta, ""},
		{"beta", int64(c.Beta), 1, maxAlphaBeta, ""},
		{"coupling", int64(c.Coupling), 1, math.MaxUint8, ""},
		step,
		{"classic_protection", int64(c.ClassicProtection), 0, maxWeight, ""},
		{"ecn_mask", int64(c.ECNMask), 1, 3, ""},
		{"mtu", int64(c.MTU), minMTU, maxMTU, ""},
	}
}

// Validate checks every parameter against the kernel's netlink policy
// (ranges as in dualpi2_policy) and returns the first violation as a
// *ConfigError, e.g. `config "coupling": 0 not in 1..255`. The "both step
// forms" check of the kernel cannot arise here (StepInPackets picks one
// form); flag parsing rejects both forms given at once.
func (c Config) Validate() error {
	for _, r := range c.ranges() {
		if r.Value < r.Min || r.Value > r.Max {
			return &r
		}
	}
	return nil
}
