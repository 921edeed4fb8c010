package instance

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/pi2hop/pi2hop/shaper"
)

// Settings are a hop's link and queue knobs as a user names them: each
// field is nil unless given. The same type describes how an instance was
// started and what a `set` request changes (Merge lays one over the
// other), and it travels as JSON on the control socket. Each field's JSON
// tag is its key; the table below declares, per key, its flag, tc's
// keywords, the queue kinds it configures and how its value reads.
//
// Resolve turns Settings into a hop.Config with these rules: a
// per-direction value (UpRate) wins over the shared one (Rate); a rate and
// a rate trace at the same level conflict; DualPI2 knobs not given take
// the kernel's defaults; with MaxRTT or TypicalRTT the auto-tuned target,
// tupdate, alpha and beta win over explicit ones, as in tc (Warnings says
// so).
type Settings struct {
	Rate          *uint64        `json:"rate,omitempty"` // bit/s, both directions; 0 = unlimited (shaper.Unlimited)
	UpRate        *uint64        `json:"up-rate,omitempty"`
	DownRate      *uint64        `json:"down-rate,omitempty"`
	RateTrace     *string        `json:"rate-trace,omitempty"` // file read by whoever resolves: give an absolute path
	UpRateTrace   *string        `json:"up-rate-trace,omitempty"`
	DownRateTrace *string        `json:"down-rate-trace,omitempty"`
	Delay         *time.Duration `json:"delay,omitempty"` // one-way, both directions
	UpDelay       *time.Duration `json:"up-delay,omitempty"`
	DownDelay     *time.Duration `json:"down-delay,omitempty"`
	Loss          *string        `json:"loss,omitempty"` // as shaper.ParseLoss reads it: each direction gets its own model
	UpLoss        *string        `json:"up-loss,omitempty"`
	DownLoss      *string        `json:"down-loss,omitempty"`
	Jitter        *Jitter        `json:"jitter,omitempty"` // delay variation, both directions (never reorders)
	UpJitter      *Jitter        `json:"up-jitter,omitempty"`
	DownJitter    *Jitter        `json:"down-jitter,omitempty"`
	Aggregate     *Aggregate     `json:"aggregate,omitempty"` // Wi-Fi-like bursts, both directions
	UpAggregate   *Aggregate     `json:"up-aggregate,omitempty"`
	DownAggregate *Aggregate     `json:"down-aggregate,omitempty"`
	ECNFault      *string        `json:"ecn-fault,omitempty"` // as shaper.ParseFault reads it, both directions
	UpECNFault    *string        `json:"up-ecn-fault,omitempty"`
	DownECNFault  *string        `json:"down-ecn-fault,omitempty"`

	AQM               *string        `json:"aqm,omitempty"` // one of aqm.Kinds; aqm.KindDualPI2 by default
	Limit             *uint32        `json:"limit,omitempty"`
	MemLimit          *uint64        `json:"memlimit,omitempty"`
	Target            *time.Duration `json:"target,omitempty"`
	Tupdate           *time.Duration `json:"tupdate,omitempty"`
	Alpha             *uint32        `json:"alpha,omitempty"` // Hz·256, as tc sends it
	Beta              *uint32        `json:"beta,omitempty"`
	Coupling          *uint8         `json:"coupling,omitempty"`
	StepThresh        *Step          `json:"step-thresh,omitempty"`
	MinQlenStep       *uint32        `json:"min-qlen-step,omitempty"`
	DropOverload      *bool          `json:"overload,omitempty"` // true: drop, false: overflow
	DropEnqueue       *bool          `json:"drop-at,omitempty"`  // true: at enqueue, false: at dequeue
	ClassicProtection *uint8         `json:"classic-protection,omitempty"`
	ECNMask           *uint8         `json:"ecn-mask,omitempty"` // 1 l4s_ect, 3 any_ect
	MaxRTT            *time.Duration `json:"max-rtt,omitempty"`
	TypicalRTT        *time.Duration `json:"typical-rtt,omitempty"`

	// The other queue disciplines' knobs (queues.go says which kind
	// takes which; tc's names).
	NQB             *bool          `json:"nqb,omitempty"`            // dualpi2, docsis: DSCP 45 to the L-queue
	Interval        *time.Duration `json:"codel-interval,omitempty"` // codel, fq_codel: tc's interval
	ECN             *bool          `json:"ecn,omitempty"`            // codel, pie, fq_codel
	CEThreshold     *time.Duration `json:"ce-threshold,omitempty"`
	CESelector      *string        `json:"ce-threshold-selector,omitempty"` // fq_codel: VALUE/MASK of the DS field
	Flows           *uint32        `json:"flows,omitempty"`
	Quantum         *uint32        `json:"quantum,omitempty"`
	DropBatch       *uint32        `json:"drop-batch,omitempty"`
	Bytemode        *bool          `json:"bytemode,omitempty"`          // pie
	DQRateEstimator *bool          `json:"dq-rate-estimator,omitempty"` // pie
	QueueProtection *bool          `json:"queue-protection,omitempty"`  // docsis
	MaxTh           *time.Duration `json:"maxth,omitempty"`             // docsis: the L-queue ramp's top
	DOCSISClassic   *string        `json:"docsis-classic,omitempty"`    // docsis: the Classic AQM, pie or pi2

	MTU  *int    `json:"mtu,omitempty"`
	Seed *uint64 `json:"seed,omitempty"`

	Force *bool `json:"force,omitempty"` // accept values beyond a Forceable bound
}

// table is every setting, in the order help lists the flags: the rows
// declared, each followed by its per-direction rows.
var table = perDirection(declared)

// declared declares every setting. A new queue knob is a field above and
// a row here whose Onto says where it lands in aqm.Spec (a link setting
// has its place in Direction instead); the commands' flags, set requests,
// the browser view's edits, bounds, per-kind defaults, errors, replay's
// and stats' config objects (QueueKnobs) and the docs (make docs) follow
// from the row (TestThrowAwayKnob). A row with PerDir has an up- and a
// down- row derived from it (perDirection), each with a field above.
var declared = []Setting{
	{Key: "rate", TC: []string{"rate"}, value: linkRate(DefaultRate), Bound: rateBound, PerDir: "`rate`",
		Usage: "link `rate` in tc units: bit, kbit, mbit, gbit, or bps, kbps, mbps (bytes/s); unlimited: no shaping. A bare number is refused (tc would read it as bit/s)"},
	{Key: "delay", TC: []string{"delay"}, value: duration(flagvalue.Duration{}), Bound: delayBound, PerDir: "one-way `delay`",
		Usage: "one-way `delay` added after the link, each direction (a FIFO delay line; never reorders): 10ms, or tc's 10msec; a bare number is refused (tc would read it as µs)"},
	{Key: "loss", TC: []string{"loss"}, value: loss(), PerDir: "`loss`",
		Usage: "random `loss` after the link, a percentage as netem reads it: 1% or 1 (both 1 %), 0.01 (0.01 %), or Gilbert-Elliott ge:p=1%,r=30%[,h=0%,k=100%]"},
	{Key: "rate-trace", value: text(), PerDir: "rate trace `FILE`",
		Usage: "vary the rate over time from `FILE`: a mahimahi trace (ms per 1500-byte opportunity, looping) or time,rate CSV, or one shipped with pi2hop: " + builtinTraces() + "; replaces --rate"},

	{Key: "aqm", Fixed: true, value: choice(flagvalue.Choice{Val: aqm.KindDualPI2, Choices: aqm.Kinds}),
		Usage: "queue discipline, each with Linux's semantics and defaults: dualpi2 (RFC 9332), fifo (tail drop, no AQM), codel (RFC 8289), pie (RFC 8033), fq_codel (RFC 8290), docsis (DOCSIS 3.1 low latency: DualQ with queue protection, RFC 9957)"},
	{Key: "limit", Onto: noneAtZero(same(byKind(func(s *aqm.Spec) map[string]*uint32 {
		return map[string]*uint32{aqm.KindDualPI2: &s.DualPI2.Limit, aqm.KindDOCSIS: &s.DOCSIS.DualPI2.Limit, aqm.KindCoDel: &s.CoDel.Limit,
			aqm.KindPIE: &s.PIE.Limit, aqm.KindFQCodel: &s.FQCodel.Limit, aqm.KindFIFO: &s.FIFO.Limit}
	}))), TC: []string{"limit"}, value: count(flagvalue.Count{N: dualpi2Default.Limit, Min: 1, Max: math.MaxUint32}),
		Usage: "queue limit in `packets`, both queues (fifo: none when only --memlimit is given)"},
	{Key: "memlimit", Onto: noneAtZero(same(byKind(func(s *aqm.Spec) map[string]*uint64 {
		return map[string]*uint64{aqm.KindDualPI2: &s.DualPI2.MemLimit, aqm.KindDOCSIS: &s.DOCSIS.DualPI2.MemLimit, aqm.KindFQCodel: &s.FQCodel.MemoryLimit,
			aqm.KindFIFO: &s.FIFO.ByteLimit}
	}))), TC: []string{"memlimit", "memory_limit"}, Kinds: []string{aqm.KindDualPI2, aqm.KindFIFO, aqm.KindFQCodel, aqm.KindDOCSIS},
		value: size(flagvalue.Size{Max: math.MaxUint32}),
		Usage: "queue limit in bytes of packet data, tc `size` units, a bare number in bytes as in tc (dualpi2, docsis: follows --limit as limit·2·mtu unless given, as in the kernel)"},
	{Key: "target", Onto: nanos(byKind(func(s *aqm.Spec) map[string]*int64 {
		return map[string]*int64{aqm.KindDualPI2: &s.DualPI2.Target, aqm.KindDOCSIS: &s.DOCSIS.DualPI2.Target, aqm.KindCoDel: &s.CoDel.Target,
			aqm.KindPIE: &s.PIE.Target, aqm.KindFQCodel: &s.FQCodel.Target}
	})), TC: []string{"target"}, Kinds: []string{aqm.KindDualPI2, aqm.KindCoDel, aqm.KindPIE, aqm.KindFQCodel, aqm.KindDOCSIS}, Tuned: true,
		value: duration(flagvalue.Duration{D: time.Duration(dualpi2Default.Target)}),
		Bound: &Bound{Min: "1us", Why: "a target of no queue at all marks or drops every packet that waits"},
		Usage: "target queue `delay`: the PI target (dualpi2, docsis), PIE's reference delay, CoDel's target (codel, fq_codel)"},
	{Key: "tupdate", Onto: nanos(byKind(func(s *aqm.Spec) map[string]*int64 {
		return map[string]*int64{aqm.KindDualPI2: &s.DualPI2.Tupdate, aqm.KindDOCSIS: &s.DOCSIS.DualPI2.Tupdate, aqm.KindPIE: &s.PIE.Tupdate}
	})), TC: []string{"tupdate"}, Kinds: []string{aqm.KindDualPI2, aqm.KindPIE, aqm.KindDOCSIS}, Tuned: true,
		value: duration(flagvalue.Duration{D: time.Duration(dualpi2Default.Tupdate), Min: time.Microsecond}),
		Usage: "probability update `interval` (dualpi2, docsis, pie)"},
	{Key: "alpha", Onto: gainOnto(func(c *aqm.Config) *uint32 { return &c.Alpha }, func(c *aqm.PIEConfig) *uint32 { return &c.Alpha }, func(c *aqm.DOCSISPIEConfig) *uint32 { return &c.Alpha }), TC: []string{"alpha"}, Kinds: []string{aqm.KindDualPI2, aqm.KindPIE, aqm.KindDOCSIS}, Tuned: true,
		value: gain(dualpi2Default.Alpha), Usage: "PI integral gain in `Hz` (sent as trunc(Hz·256) like tc)"},
	{Key: "beta", Onto: gainOnto(func(c *aqm.Config) *uint32 { return &c.Beta }, func(c *aqm.PIEConfig) *uint32 { return &c.Beta }, func(c *aqm.DOCSISPIEConfig) *uint32 { return &c.Beta }), TC: []string{"beta"}, Kinds: []string{aqm.KindDualPI2, aqm.KindPIE, aqm.KindDOCSIS}, Tuned: true,
		value: gain(dualpi2Default.Beta), Usage: "PI proportional gain in `Hz` (sent as trunc(Hz·256) like tc)"},
	{Key: "coupling", Onto: same(inDual(func(c *aqm.Config) *uint8 { return &c.Coupling })), TC: []string{"coupling_factor"}, Kinds: []string{aqm.KindDualPI2, aqm.KindDOCSIS},
		value: integer[uint8](flagvalue.IntRange{N: int(dualpi2Default.Coupling), Min: 1, Max: 255}),
		Usage: "coupling factor `k`, 1..255: L4S marks with k·p, Classic with p²"},
	{Key: "step-thresh", Onto: stepOnto, TC: []string{"step_thresh"}, Kinds: []string{aqm.KindDualPI2}, value: step(dualpi2Default),
		Usage: "L4S step marking threshold: sojourn `time` (1ms) or L-queue length (3p, 3pkts, 3packets)"},
	{Key: "min-qlen-step", Onto: same(inDual(func(c *aqm.Config) *uint32 { return &c.MinQlenStep })), TC: []string{"min_qlen_step"}, Kinds: []string{aqm.KindDualPI2},
		value: count(flagvalue.Count{N: dualpi2Default.MinQlenStep, Max: math.MaxUint32}),
		Usage: "L-queue length (`packets`) below which the step AQM leaves a packet alone"},
	{Key: "overload", Onto: same(inDual(func(c *aqm.Config) *bool { return &c.DropOverload })), TC: []string{"drop_on_overload", "overflow"}, Kinds: []string{aqm.KindDualPI2, aqm.KindDOCSIS},
		value: choiceOf(flagvalue.Choice{Choices: []string{"drop", "overflow"}, Aliases: map[string]string{"drop_on_overload": "drop"}},
			map[string]bool{"drop": true, "overflow": false}, dualpi2Default.DropOverload),
		Usage: "when k·p > 1: drop, or overflow (cap p at 1/k, let the queue grow)"},
	{Key: "drop-at", Onto: same(inDual(func(c *aqm.Config) *bool { return &c.DropEnqueue })), TC: []string{"drop_enqueue", "drop_dequeue"}, Kinds: []string{aqm.KindDualPI2, aqm.KindDOCSIS},
		value: choiceOf(flagvalue.Choice{Choices: []string{"enqueue", "dequeue"}, Aliases: map[string]string{"drop_enqueue": "enqueue", "drop_dequeue": "dequeue"}},
			map[string]bool{"enqueue": true, "dequeue": false}, dualpi2Default.DropEnqueue),
		Usage: "apply the PI drop/mark decision at enqueue or dequeue (step marks are always at dequeue)"},
	{Key: "classic-protection", Onto: same(inDual(func(c *aqm.Config) *uint8 { return &c.ClassicProtection })), TC: []string{"classic_protection"}, Kinds: []string{aqm.KindDualPI2, aqm.KindDOCSIS},
		value: integer[uint8](flagvalue.IntRange{N: int(dualpi2Default.ClassicProtection), Max: 100, Unit: "%"}),
		Usage: "Classic queue's WRR weight in `percent`, 0..100"},
	{Key: "ecn-mask", Onto: same(inDual(func(c *aqm.Config) *uint8 { return &c.ECNMask })), TC: []string{"l4s_ect", "any_ect"}, Kinds: []string{aqm.KindDualPI2, aqm.KindDOCSIS},
		value: choiceOf(flagvalue.Choice{Val: "l4s", Choices: []string{"l4s", "any"}, Aliases: map[string]string{"l4s_ect": "l4s", "any_ect": "any"}},
			map[string]uint8{"l4s": 1, "any": 3}, dualpi2Default.ECNMask),
		Usage: "what goes to the L4S queue: l4s (ECT(1), CE) or any (ECT(0) too)"},
	{Key: "max-rtt", TC: []string{"max_rtt"}, Kinds: []string{aqm.KindDualPI2, aqm.KindDOCSIS},
		value: duration(flagvalue.Duration{Min: time.Microsecond, Optional: true}),
		Usage: "auto-tune target, tupdate, alpha, beta like tc for this largest expected round-trip `time`; as in tc, the tuned values win over --target, --tupdate, --alpha, --beta (with a warning)"},
	{Key: "typical-rtt", TC: []string{"typical_rtt"}, Kinds: []string{aqm.KindDualPI2, aqm.KindDOCSIS},
		value: duration(flagvalue.Duration{Min: time.Microsecond, Optional: true}),
		Usage: "auto-tune like tc for this typical round-trip `time` (with or without --max-rtt); the tuned values win over explicit ones, as in tc"},
	{Key: "mtu", Fixed: true, value: integer[int](flagvalue.IntRange{N: DefaultMTU, Min: 68, Max: 65535}),
		Usage: "MTU in `bytes`: DualPI2's 2-MTU guard and WRR credit use it"},
	{Key: "seed", Fixed: true, value: number(DefaultSeed), Usage: "seed of the random loss and AQM decisions (same seed, same run)"},
	{Key: "force", Lifts: true, value: boolean(false), Usage: "accept a --delay beyond 10s, longer than any real path"},

	{Key: "nqb", Onto: same(byKind(func(s *aqm.Spec) map[string]*bool {
		return map[string]*bool{aqm.KindDualPI2: &s.DualPI2.NQB, aqm.KindDOCSIS: &s.DOCSIS.NQB}
	})), Kinds: []string{aqm.KindDualPI2, aqm.KindDOCSIS}, value: boolean(false),
		Usage: "dualpi2, docsis: packets with DSCP 45 (NQB, RFC 9956) use the L queue whatever their ECN"},
	{Key: "ecn", Onto: same(byKind(func(s *aqm.Spec) map[string]*bool {
		return map[string]*bool{aqm.KindCoDel: &s.CoDel.ECN, aqm.KindPIE: &s.PIE.ECN, aqm.KindFQCodel: &s.FQCodel.ECN}
	})), TC: []string{"ecn", "noecn"}, Kinds: []string{aqm.KindCoDel, aqm.KindPIE, aqm.KindFQCodel}, value: boolean(false),
		Usage: "codel, pie, fq_codel: mark ECN-capable packets instead of dropping them (--ecn=false or tc's noecn: drop them)"},
	{Key: "codel-interval", Onto: nanos(byKind(func(s *aqm.Spec) map[string]*int64 {
		return map[string]*int64{aqm.KindCoDel: &s.CoDel.Interval, aqm.KindFQCodel: &s.FQCodel.Interval}
	})), TC: []string{"interval"}, Kinds: []string{aqm.KindCoDel, aqm.KindFQCodel},
		value: duration(flagvalue.Duration{D: aqm.DefaultCodelInterval, Min: time.Microsecond}),
		Usage: "codel, fq_codel: CoDel's `interval`, how long the sojourn must stay above target before a drop"},
	{Key: "ce-threshold", Onto: ceThreshold(), TC: []string{"ce_threshold"}, Kinds: []string{aqm.KindCoDel, aqm.KindFQCodel},
		value: duration(flagvalue.Duration{Optional: true}),
		Usage: "codel, fq_codel: CE-mark ECN-capable packets whose sojourn exceeds this `time` (off unless given)"},
	{Key: "ce-threshold-selector", Onto: ceSelector, TC: []string{"ce_threshold_selector"}, Kinds: []string{aqm.KindFQCodel}, value: text(),
		Usage: "fq_codel: apply --ce-threshold only where DS field & MASK == VALUE, as `VALUE/MASK` (0x01/0x01: ECT(1))"},
	{Key: "flows", Onto: same(byKind(func(s *aqm.Spec) map[string]*uint32 { return map[string]*uint32{aqm.KindFQCodel: &s.FQCodel.Flows} })), TC: []string{"flows"}, Kinds: []string{aqm.KindFQCodel},
		value: count(flagvalue.Count{N: aqm.DefaultFQCodelFlows, Min: 1, Max: 65536, Of: "buckets"}), Usage: "fq_codel: number of flow `buckets`"},
	{Key: "quantum", Onto: same(byKind(func(s *aqm.Spec) map[string]*uint32 { return map[string]*uint32{aqm.KindFQCodel: &s.FQCodel.Quantum} })), TC: []string{"quantum"}, Kinds: []string{aqm.KindFQCodel},
		value: count(flagvalue.Count{N: aqm.DefaultPschedMTU, Min: 256, Max: 1 << 20, Of: "bytes"}), Usage: "fq_codel: DRR quantum in `bytes`"},
	{Key: "drop-batch", Onto: same(byKind(func(s *aqm.Spec) map[string]*uint32 { return map[string]*uint32{aqm.KindFQCodel: &s.FQCodel.DropBatch} })), TC: []string{"drop_batch"}, Kinds: []string{aqm.KindFQCodel},
		value: count(flagvalue.Count{N: aqm.DefaultFQCodelDropBatch, Min: 1, Max: math.MaxUint32}),
		Usage: "fq_codel: most `packets` dropped from the fattest flow on overflow"},
	{Key: "bytemode", Onto: same(byKind(func(s *aqm.Spec) map[string]*bool { return map[string]*bool{aqm.KindPIE: &s.PIE.Bytemode} })), TC: []string{"bytemode", "nobytemode"}, Kinds: []string{aqm.KindPIE}, value: boolean(false),
		Usage: "pie: scale the drop probability by packet size"},
	{Key: "dq-rate-estimator", Onto: same(byKind(func(s *aqm.Spec) map[string]*bool { return map[string]*bool{aqm.KindPIE: &s.PIE.DQRateEstimator} })), TC: []string{"dq_rate_estimator", "no_dq_rate_estimator"}, Kinds: []string{aqm.KindPIE}, value: boolean(false),
		Usage: "pie: estimate queue delay from the drain rate (Little's law) instead of timestamps"},
	{Key: "queue-protection", Onto: same(byKind(func(s *aqm.Spec) map[string]*bool { return map[string]*bool{aqm.KindDOCSIS: &s.DOCSIS.QProt.On} })), Kinds: []string{aqm.KindDOCSIS}, value: boolean(true),
		Usage: "docsis: queue protection (RFC 9957), sanctioning flows that build the L queue"},
	{Key: "maxth", Onto: nanos(byKind(func(s *aqm.Spec) map[string]*int64 { return map[string]*int64{aqm.KindDOCSIS: &s.DOCSIS.MaxTh} })), Kinds: []string{aqm.KindDOCSIS}, value: duration(flagvalue.Duration{D: aqm.DefaultDOCSISMaxTh, Min: time.Microsecond}),
		Usage: "docsis: queue `delay` where the L queue's marking ramp reaches 100 %"},
	{Key: "docsis-classic", Onto: docsisClassic, Kinds: []string{aqm.KindDOCSIS}, value: choice(flagvalue.Choice{Val: aqm.DOCSISClassicPIE, Choices: aqm.DOCSISClassics}),
		Usage: "docsis: the Classic queue's `AQM`: pie (DOCSIS-PIE, RFC 8034, DOCSIS's own; --alpha, --beta are its A, B) or pi2 (DualPI2's PI2 with its gains)"},

	{Key: "jitter", value: jitter(), PerDir: "delay variation `AMOUNT[,DIST]`",
		Usage: "delay variation added per packet, never reordering: `AMOUNT[,DIST]`, DIST uniform (±AMOUNT; when none is named), normal, pareto, paretonormal (deviation AMOUNT)"},
	{Key: "aggregate", value: aggregate(), PerDir: "bursts `INTERVAL,SIZE`",
		Usage: "Wi-Fi-like bursts: the link sends only every INTERVAL, up to SIZE per burst, as `INTERVAL,SIZE` (4ms,6kb)"},
	{Key: "ecn-fault", value: ecnFault(), PerDir: "ECN path fault `SPEC`",
		Usage: "a middlebox's ECN fault on the path: `SPEC` is KIND then comma-separated options: after (rewrite after the queue, not before it), after=2s or after=100p (from then on), share=30%, proto=udp, sport=N, dport=N. KIND: bleach, tos-zero, ect1-to-ect0, ect0-to-ect1, ce-bleach, mangle, drop-ect, or none for a clean path"},
}

// The bounds the link's rows share with their per-direction rows.
var (
	// Below 8 kbit/s a full-size packet takes more than 1.5 s to send.
	rateBound = &Bound{Min: "8kbit", Zero: true, ZeroName: shaper.UnlimitedName,
		Why: "too slow to send a 1500-byte packet within 1.5 s"}
	// A geostationary hop is 0.25 s one way; 10 s is beyond any path.
	delayBound = &Bound{Min: "0s", Max: "10s", Forceable: true, Why: "longer than any real path's one-way delay"}
)

// dualpi2Default is sch_dualpi2's configuration when tc gives no knob.
var dualpi2Default = aqm.DefaultConfig()

// Defaults for what Settings leave out: a 10 Mbit/s bottleneck like the
// one Apple throttles macOS Internet Sharing to in its L4S demo (WWDC23),
// adding no delay or loss of its own, with sch_dualpi2's defaults.
const (
	DefaultRate = 10_000_000     // bit/s
	DefaultMTU  = aqm.DefaultMTU // bytes: TUN devices carry IP packets, no L2 header
	DefaultSeed = 1
	// DefaultFIFOLimit is the FIFO's buffer when neither limit nor
	// memlimit is given: Linux's default txqueuelen, the deep buffer of a
	// router without queue management.
	DefaultFIFOLimit = 1000
)

// FieldError is a setting that cannot be used; Field is its key.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// ErrorKey returns the Settings key an error of Resolve, Direction or
// DualPI2 is about: a FieldError's key, or the key of an aqm.ConfigError's
// field; "" when it names none.
func ErrorKey(err error) string {
	var fe *FieldError
	var ce *aqm.ConfigError
	switch {
	case errors.As(err, &fe):
		return fe.Field
	case errors.As(err, &ce):
		return settingOf(ce.Field)
	}
	return ""
}

// Tunes reports whether auto-tuning in s sets the value of key (target,
// tupdate, alpha, beta), whatever s gives for it.
func (s Settings) Tunes(key string) bool {
	st, _ := Lookup(key)
	return st.Tuned && s.tuned()
}

// Given lists the keys set in s, in field order.
func (s Settings) Given() []string {
	var keys []string
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		if !v.Field(i).IsNil() {
			keys = append(keys, jsonKey(v.Type().Field(i)))
		}
	}
	return keys
}

func jsonKey(f reflect.StructField) string {
	k, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return k
}

// Has reports whether key is set in s.
func (s Settings) Has(key string) bool {
	for _, k := range s.Given() {
		if k == key {
			return true
		}
	}
	return false
}

// Merge returns s with every setting of e laid over it. A rate and a rate
// trace of the same level replace each other, so a set request can turn
// a constant rate into a trace and back.
func (s Settings) Merge(e Settings) Settings {
	dst, src := reflect.ValueOf(&s).Elem(), reflect.ValueOf(e)
	for i := range src.NumField() {
		if !src.Field(i).IsNil() {
			dst.Field(i).Set(src.Field(i))
		}
	}
	for _, l := range []struct {
		rate   **uint64
		trace  **string
		eRate  *uint64
		eTrace *string
	}{
		{&s.Rate, &s.RateTrace, e.Rate, e.RateTrace},
		{&s.UpRate, &s.UpRateTrace, e.UpRate, e.UpRateTrace},
		{&s.DownRate, &s.DownRateTrace, e.DownRate, e.DownRateTrace},
	} {
		switch {
		case l.eRate != nil && l.eTrace == nil:
			*l.trace = nil
		case l.eTrace != nil && l.eRate == nil:
			*l.rate = nil
		}
	}
	return s
}

// tuned reports whether auto-tuning is asked for.
func (s Settings) tuned() bool { return s.MaxRTT != nil || s.TypicalRTT != nil }

// Warnings says what of s is given but has no effect: with max-rtt or
// typical-rtt, explicit target, tupdate, alpha and beta are ignored (tc
// prints "rtt_max is specified, ignore alpha/beta/tupdate/target").
func (s Settings) Warnings() []string {
	if !s.tuned() {
		return nil
	}
	var ignored []string
	for _, st := range table {
		if st.Tuned && s.Has(st.Key) {
			ignored = append(ignored, st.Key)
		}
	}
	if len(ignored) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("max-rtt/typical-rtt given: ignoring %s; the auto-tuned values win, as in tc (rtt_max is specified, ignore alpha/beta/tupdate/target)",
		strings.Join(ignored, ", "))}
}

// Resolve builds both directions of a hop named name: "up" is client to
// server (LAN to WAN), "down" the reverse. It reads rate trace files.
func (s Settings) Resolve(name string) (hop.Config, error) {
	up, err := s.Direction("up")
	if err != nil {
		return hop.Config{}, err
	}
	down, err := s.Direction("down")
	if err != nil {
		return hop.Config{}, err
	}
	return hop.Config{Name: name, Up: up, Down: down, Seed: deref(s.Seed, DefaultSeed), MTU: s.mtu()}, nil
}

func deref[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

func (s Settings) mtu() int { return deref(s.MTU, DefaultMTU) }

// Direction resolves one direction: "up", "down", or "" for the shared
// settings only (replay's single link). It reads a rate trace file if one
// applies, so call it once per direction.
func (s Settings) Direction(dir string) (hop.DirConfig, error) {
	var zero hop.DirConfig
	if dir != "" && dir != "up" && dir != "down" {
		return zero, fmt.Errorf("link direction %q: want up or down", dir)
	}
	if err := s.Check(); err != nil {
		return zero, err
	}
	rate, err := s.rateFor(dir)
	if err != nil {
		return zero, err
	}
	link := shaper.Config{Rate: rate, Delay: int64(s.delayFor(dir))}
	if l := forDir(dir, s.UpLoss, s.DownLoss, s.Loss); l != nil {
		if link.Loss, err = shaper.ParseLoss(*l); err != nil {
			return zero, &FieldError{dirKey(dir, "loss", s.UpLoss, s.DownLoss), err}
		}
	}
	if j := s.jitterFor(dir); j != nil {
		if link.Jitter, err = *j, j.Validate(); err != nil {
			return zero, &FieldError{dirKey(dir, "jitter", s.UpJitter, s.DownJitter), err}
		}
	}
	if a := s.aggregateFor(dir); a != nil {
		link.Aggregate = *a
		if err := link.Aggregate.Validate(); err != nil {
			return zero, &FieldError{dirKey(dir, "aggregate", s.UpAggregate, s.DownAggregate), err}
		}
	}
	if f := forDir(dir, s.UpECNFault, s.DownECNFault, s.ECNFault); f != nil {
		if link.Fault, err = shaper.ParseFault(*f); err != nil {
			return zero, &FieldError{dirKey(dir, "ecn-fault", s.UpECNFault, s.DownECNFault), err}
		}
	}
	q, err := s.QueueSpec()
	if err != nil {
		return zero, err
	}
	if c, ok := rate.(shaper.Const); ok && q.Kind == aqm.KindDOCSIS {
		// DOCSIS's qdelay and FLOOR come from the service flow's rate.
		q.DOCSIS.Rate = c.BitsPerSecond
	}
	return hop.DirConfig{Link: link, Queue: q}, nil
}

// rateFor resolves the rate of one direction: the most specific level
// given wins (up-rate over rate).
func (s Settings) rateFor(dir string) (shaper.Rate, error) {
	type level struct {
		rateKey, traceKey string
		rate              *uint64
		trace             *string
	}
	levels := []level{{"rate", "rate-trace", s.Rate, s.RateTrace}}
	switch dir {
	case "up":
		levels = append([]level{{"up-rate", "up-rate-trace", s.UpRate, s.UpRateTrace}}, levels...)
	case "down":
		levels = append([]level{{"down-rate", "down-rate-trace", s.DownRate, s.DownRateTrace}}, levels...)
	}
	for _, l := range levels {
		switch {
		case l.rate != nil && l.trace != nil:
			return nil, &FieldError{l.traceKey, fmt.Errorf("%s is given too: both set the rate, give one", l.rateKey)}
		case l.trace != nil:
			r, err := loadRateTrace(*l.trace)
			if err != nil {
				return nil, &FieldError{l.traceKey, err}
			}
			return r, nil
		case l.rate != nil:
			if *l.rate == 0 {
				return shaper.Unlimited{}, nil // --rate unlimited
			}
			return shaper.Const{BitsPerSecond: *l.rate}, nil
		}
	}
	return shaper.Const{BitsPerSecond: DefaultRate}, nil
}

func (s Settings) delayFor(dir string) time.Duration {
	switch {
	case dir == "up" && s.UpDelay != nil:
		return *s.UpDelay
	case dir == "down" && s.DownDelay != nil:
		return *s.DownDelay
	}
	return deref(s.Delay, 0)
}

// QueueSpec builds the queue discipline: the kind's kernel defaults with
// the knobs given laid over them. A knob the kind does not take is an
// error naming it (queues.go has the table).
func (s Settings) QueueSpec() (aqm.Spec, error) {
	kind := deref(s.AQM, aqm.KindDualPI2)
	if _, ok := aqm.DefaultSpec(kind); !ok {
		return aqm.Spec{}, &FieldError{"aqm", fmt.Errorf("%q: want one of %s", kind, strings.Join(aqm.Kinds, ", "))}
	}
	if err := s.checkKindKeys(kind); err != nil {
		return aqm.Spec{}, err
	}
	spec, _ := aqm.DefaultSpec(kind)
	if kind == aqm.KindFIFO {
		// No limit unless given, the other one's only if either is.
		spec.FIFO = aqm.FIFOConfig{}
		err := s.specFrom(&spec)
		if spec.FIFO == (aqm.FIFOConfig{}) {
			spec.FIFO.Limit = DefaultFIFOLimit
		}
		return spec, err
	}
	if c := dualOf(&spec); c != nil {
		c.MTU = s.mtu()
		// As the kernel: memlimit follows limit unless given.
		c.MemLimit = aqm.DefaultMemLimit(deref(s.Limit, c.Limit), c.MTU)
	}
	if err := s.specFrom(&spec); err != nil {
		return spec, err
	}
	if c := dualOf(&spec); c != nil && s.tuned() {
		// tc (q_dualpi2.c): the RTTs override whatever PI values were
		// given; Warnings reports the ones ignored.
		var err error
		c.Target, c.Tupdate, c.Alpha, c.Beta, err = aqm.Tune(int64(deref(s.MaxRTT, 0)), int64(deref(s.TypicalRTT, 0)))
		if err != nil {
			key := "max-rtt"
			if s.MaxRTT == nil {
				key = "typical-rtt"
			}
			return spec, &FieldError{key, err}
		}
	}
	return spec, spec.Validate()
}

// DualPI2 lays the DualPI2 settings over the kernel defaults and checks
// the result: a range violation is an *aqm.ConfigError, a failed
// auto-tuning a *FieldError on max-rtt (or typical-rtt when only it is
// given).
func (s Settings) DualPI2() (aqm.Config, error) {
	kind := aqm.KindDualPI2
	s.AQM = &kind
	spec, err := s.QueueSpec()
	return spec.DualPI2, err
}
