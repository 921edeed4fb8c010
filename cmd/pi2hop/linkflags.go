package main

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/spf13/pflag"
)

// linkFlags are the flags that describe a bottleneck: the link (rate,
// delay, loss) and its queue discipline (--aqm and every tc-dualpi2 knob).
// replay uses one direction; run, shell and lab use two ("up", "down"),
// which share the AQM settings and may differ in rate, delay and trace.
type linkFlags struct {
	fs    *pflag.FlagSet
	bidir bool

	rate      flagvalue.LinkRate
	delay     flagvalue.Duration
	loss      flagvalue.Loss
	rateTrace string

	// Per direction, only with bidir; they override the shared flags.
	upRate, downRate           flagvalue.LinkRate
	upDelay, downDelay         flagvalue.Duration
	upRateTrace, downRateTrace string

	aqmKind           flagvalue.Choice
	limit             flagvalue.Count
	memlimit          flagvalue.Size
	target, tupdate   flagvalue.Duration
	alpha, beta       flagvalue.Gain
	coupling          flagvalue.IntRange
	stepThresh        flagvalue.Step
	minQlenStep       flagvalue.Count
	overload          flagvalue.Choice
	dropAt            flagvalue.Choice
	classicProtection flagvalue.IntRange
	ecnMask           flagvalue.Choice
	maxRTT            flagvalue.Duration
	typicalRTT        flagvalue.Duration
	mtu               flagvalue.IntRange
	seedValue         uint64

	// The other queue disciplines (codel, pie, fq_codel, docsis) and
	// the link's shape (jitter, aggregation bursts).
	nqb, ecn, bytemode, dqRate, qprot bool
	interval, ceThreshold, maxTh      flagvalue.Duration
	ceSelector                        string
	flows, quantum, dropBatch         flagvalue.Count
	jitter, upJitter, downJitter      flagvalue.Jitter
	agg, upAgg, downAgg               flagvalue.Aggregate
}

// addLinkFlags declares the link and AQM flags on fs. With bidir it also
// declares the per-direction --up-*/--down-* flags.
func addLinkFlags(fs *pflag.FlagSet, bidir bool) *linkFlags {
	def := aqm.DefaultConfig()
	f := &linkFlags{
		fs:                fs,
		bidir:             bidir,
		rate:              flagvalue.LinkRate{Rate: flagvalue.Rate{BPS: instance.DefaultRate}},
		aqmKind:           flagvalue.Choice{Val: aqm.KindDualPI2, Choices: aqm.Kinds},
		limit:             flagvalue.Count{N: def.Limit, Min: 1, Max: math.MaxUint32},
		memlimit:          flagvalue.Size{Max: math.MaxUint32},
		target:            flagvalue.Duration{D: time.Duration(def.Target)},
		tupdate:           flagvalue.Duration{D: time.Duration(def.Tupdate), Min: time.Microsecond},
		alpha:             flagvalue.Gain{Netlink: def.Alpha},
		beta:              flagvalue.Gain{Netlink: def.Beta},
		coupling:          flagvalue.IntRange{N: int(def.Coupling), Min: 1, Max: 255},
		stepThresh:        flagvalue.Step{NS: def.StepThresh},
		minQlenStep:       flagvalue.Count{N: def.MinQlenStep, Max: math.MaxUint32},
		overload:          flagvalue.Choice{Val: "drop", Choices: []string{"drop", "overflow"}, Aliases: map[string]string{"drop_on_overload": "drop"}},
		dropAt:            flagvalue.Choice{Val: "dequeue", Choices: []string{"enqueue", "dequeue"}, Aliases: map[string]string{"drop_enqueue": "enqueue", "drop_dequeue": "dequeue"}},
		classicProtection: flagvalue.IntRange{N: int(def.ClassicProtection), Max: 100, Unit: "%"},
		ecnMask:           flagvalue.Choice{Val: "l4s", Choices: []string{"l4s", "any"}, Aliases: map[string]string{"l4s_ect": "l4s", "any_ect": "any"}},
		maxRTT:            flagvalue.Duration{Min: time.Microsecond, Optional: true},
		typicalRTT:        flagvalue.Duration{Min: time.Microsecond, Optional: true},
		mtu:               flagvalue.IntRange{N: instance.DefaultMTU, Min: 68, Max: 65535},
		upDelay:           flagvalue.Duration{Optional: true},
		downDelay:         flagvalue.Duration{Optional: true},
		interval:          flagvalue.Duration{D: aqm.DefaultCodelInterval, Min: time.Microsecond},
		ceThreshold:       flagvalue.Duration{Optional: true},
		maxTh:             flagvalue.Duration{D: aqm.DefaultDOCSISMaxTh, Min: time.Microsecond},
		flows:             flagvalue.Count{N: aqm.DefaultFQCodelFlows, Min: 1, Max: 65536},
		quantum:           flagvalue.Count{N: aqm.DefaultPschedMTU, Min: 256, Max: 1 << 20},
		dropBatch:         flagvalue.Count{N: aqm.DefaultFQCodelDropBatch, Min: 1, Max: math.MaxUint32},
	}
	if def.DropEnqueue {
		f.dropAt.Val = "enqueue"
	}
	if !def.DropOverload {
		f.overload.Val = "overflow"
	}
	if def.ECNMask == 3 {
		f.ecnMask.Val = "any"
	}
	if def.StepInPackets {
		f.stepThresh = flagvalue.Step{Packets: uint32(def.StepThresh), InPackets: true}
	}

	fs.Var(&f.rate, "rate", "link `rate` in tc units: bit, kbit, mbit, gbit, or bps, kbps, mbps (bytes/s); unlimited: no shaping")
	fs.Var(&f.delay, "delay", "one-way `delay` added after the link (a FIFO delay line; never reorders)")
	fs.Var(&f.loss, "loss", "random `loss` after the link: 1%, 0.01, or Gilbert-Elliott ge:p=1%,r=30%[,h=0,k=100%] (default none)")
	fs.StringVar(&f.rateTrace, "rate-trace", "", "vary the rate over time from `FILE`: a mahimahi trace (ms per 1500-byte opportunity, looping) or time,rate CSV; replaces --rate")
	if bidir {
		fs.Var(&f.upRate, "up-rate", "uplink `rate` (client to server); default --rate")
		fs.Var(&f.downRate, "down-rate", "downlink `rate` (server to client); default --rate")
		fs.Var(&f.upDelay, "up-delay", "uplink one-way `delay`; default --delay")
		fs.Var(&f.downDelay, "down-delay", "downlink one-way `delay`; default --delay")
		fs.StringVar(&f.upRateTrace, "up-rate-trace", "", "uplink rate trace `FILE`; default --rate-trace")
		fs.StringVar(&f.downRateTrace, "down-rate-trace", "", "downlink rate trace `FILE`; default --rate-trace")
	}
	fs.Var(&f.aqmKind, "aqm", "queue discipline, each with Linux's semantics and defaults: dualpi2 (RFC 9332), fifo (tail drop, no AQM), codel (RFC 8289), pie (RFC 8033), fq_codel (RFC 8290), docsis (DOCSIS 3.1 low latency: DualQ with queue protection, RFC 9957)")
	fs.Var(&f.limit, "limit", "queue limit in `packets`, both queues (fifo: default 1000 packets unless --memlimit is given)")
	fs.Var(&f.memlimit, "memlimit", "queue limit in bytes of packet data, tc `size` units (default limit·2·mtu, as the kernel)")
	fs.Var(&f.target, "target", "target queue delay: the PI target (dualpi2, docsis; default 15ms, docsis 10ms), PIE's reference delay (15ms), CoDel's target (codel, fq_codel: 5ms)")
	fs.Var(&f.tupdate, "tupdate", "probability update interval (dualpi2, docsis: 16ms; pie: 15ms)")
	fs.Var(&f.alpha, "alpha", "PI integral gain in `Hz` (sent as trunc(Hz·256) like tc)")
	fs.Var(&f.beta, "beta", "PI proportional gain in `Hz` (sent as trunc(Hz·256) like tc)")
	fs.Var(&f.coupling, "coupling", "coupling factor k, 1..255: L4S marks with k·p, Classic with p²")
	fs.Var(&f.stepThresh, "step-thresh", "L4S step marking threshold: sojourn `time` (1ms) or L-queue length (3p, 3pkts, 3packets)")
	fs.Var(&f.minQlenStep, "min-qlen-step", "L-queue length (`packets`) below which the step AQM leaves a packet alone")
	fs.Var(&f.overload, "overload", "when k·p > 1: drop (drop_on_overload) or overflow (cap p at 1/k, let the queue grow)")
	fs.Var(&f.dropAt, "drop-at", "apply the PI drop/mark decision at enqueue or dequeue (step marks are always at dequeue)")
	fs.Var(&f.classicProtection, "classic-protection", "Classic queue's WRR weight in `percent`, 0..100")
	fs.Var(&f.ecnMask, "ecn-mask", "what goes to the L4S queue: l4s (ECT(1), CE) or any (ECT(0) too)")
	fs.Var(&f.maxRTT, "max-rtt", "auto-tune target, tupdate, alpha, beta like tc for this largest expected RTT; as in tc, the tuned values win over --target, --tupdate, --alpha, --beta (with a warning)")
	fs.Var(&f.typicalRTT, "typical-rtt", "auto-tune like tc for this typical RTT (with or without --max-rtt); the tuned values win over explicit ones, as in tc")
	fs.Var(&f.mtu, "mtu", "MTU in `bytes`: DualPI2's 2-MTU guard and WRR credit use it")
	fs.Uint64Var(&f.seedValue, "seed", instance.DefaultSeed, "seed of the random loss and AQM decisions (same seed, same run)")
	fs.BoolVar(&f.nqb, "nqb", false, "dualpi2, docsis: packets with DSCP 45 (NQB, RFC 9956) use the L queue whatever their ECN")
	fs.BoolVar(&f.ecn, "ecn", false, "codel, pie, fq_codel: mark ECN-capable packets instead of dropping them (default: off for codel and pie, on for fq_codel, as in Linux)")
	fs.Var(&f.interval, "codel-interval", "codel, fq_codel: CoDel's interval (tc's interval), how long the sojourn must stay above target before a drop")
	fs.Var(&f.ceThreshold, "ce-threshold", "codel, fq_codel: CE-mark ECN-capable packets whose sojourn exceeds this (default off)")
	fs.StringVar(&f.ceSelector, "ce-threshold-selector", "", "fq_codel: apply --ce-threshold only where DS field & MASK == VALUE, as `VALUE/MASK` (0x01/0x01: ECT(1))")
	fs.Var(&f.flows, "flows", "fq_codel: number of flow buckets")
	fs.Var(&f.quantum, "quantum", "fq_codel: DRR quantum in `bytes`")
	fs.Var(&f.dropBatch, "drop-batch", "fq_codel: most `packets` dropped from the fattest flow on overflow")
	fs.BoolVar(&f.bytemode, "bytemode", false, "pie: scale the drop probability by packet size")
	fs.BoolVar(&f.dqRate, "dq-rate-estimator", false, "pie: estimate queue delay from the drain rate (Little's law) instead of timestamps")
	fs.BoolVar(&f.qprot, "queue-protection", true, "docsis: queue protection (RFC 9957), sanctioning flows that build the L queue")
	fs.Var(&f.maxTh, "maxth", "docsis: queue delay where the L queue's marking ramp reaches 100 %")
	fs.Var(&f.jitter, "jitter", "delay variation added per packet, never reordering: `AMOUNT[,DIST]`, DIST uniform (default, ±AMOUNT), normal, pareto, paretonormal (deviation AMOUNT)")
	fs.Var(&f.agg, "aggregate", "Wi-Fi-like bursts: the link sends only every INTERVAL, up to SIZE per burst, as `INTERVAL,SIZE` (4ms,6kb)")
	if bidir {
		fs.Var(&f.upJitter, "up-jitter", "uplink delay variation; default --jitter")
		fs.Var(&f.downJitter, "down-jitter", "downlink delay variation; default --jitter")
		fs.Var(&f.upAgg, "up-aggregate", "uplink bursts; default --aggregate")
		fs.Var(&f.downAgg, "down-aggregate", "downlink bursts; default --aggregate")
	}
	return f
}

// seed returns --seed.
func (f *linkFlags) seed() uint64 { return f.seedValue }

// mtuBytes returns --mtu.
func (f *linkFlags) mtuBytes() int { return f.mtu.N }

// given reports whether the flag named was set on the command line.
func (f *linkFlags) given(name string) bool {
	return f.fs.Lookup(name) != nil && f.fs.Changed(name)
}

// settings turns the flags given into instance.Settings: what the library
// resolves into a configuration, and what a set request sends.
func (f *linkFlags) settings() instance.Settings {
	var s instance.Settings
	set := func(name string, apply func()) {
		if f.given(name) {
			apply()
		}
	}
	set("rate", func() { s.Rate = &f.rate.BPS })
	set("up-rate", func() { s.UpRate = &f.upRate.BPS })
	set("down-rate", func() { s.DownRate = &f.downRate.BPS })
	set("rate-trace", func() { s.RateTrace = &f.rateTrace })
	set("up-rate-trace", func() { s.UpRateTrace = &f.upRateTrace })
	set("down-rate-trace", func() { s.DownRateTrace = &f.downRateTrace })
	set("delay", func() { s.Delay = &f.delay.D })
	set("up-delay", func() { s.UpDelay = &f.upDelay.D })
	set("down-delay", func() { s.DownDelay = &f.downDelay.D })
	set("loss", func() { s.Loss = &f.loss.Text })
	set("aqm", func() { s.AQM = &f.aqmKind.Val })
	set("limit", func() { s.Limit = &f.limit.N })
	set("memlimit", func() { s.MemLimit = &f.memlimit.Bytes })
	set("target", func() { s.Target = &f.target.D })
	set("tupdate", func() { s.Tupdate = &f.tupdate.D })
	set("alpha", func() { s.Alpha = &f.alpha.Netlink })
	set("beta", func() { s.Beta = &f.beta.Netlink })
	set("coupling", func() { c := uint8(f.coupling.N); s.Coupling = &c })
	set("step-thresh", func() {
		s.StepThresh = &instance.Step{Time: time.Duration(f.stepThresh.NS), Packets: f.stepThresh.Packets, InPackets: f.stepThresh.InPackets}
	})
	set("min-qlen-step", func() { s.MinQlenStep = &f.minQlenStep.N })
	set("overload", func() { b := f.overload.Val == "drop"; s.DropOverload = &b })
	set("drop-at", func() { b := f.dropAt.Val == "enqueue"; s.DropEnqueue = &b })
	set("classic-protection", func() { c := uint8(f.classicProtection.N); s.ClassicProtection = &c })
	set("ecn-mask", func() {
		m := uint8(1)
		if f.ecnMask.Val == "any" {
			m = 3
		}
		s.ECNMask = &m
	})
	set("max-rtt", func() { s.MaxRTT = &f.maxRTT.D })
	set("typical-rtt", func() { s.TypicalRTT = &f.typicalRTT.D })
	set("mtu", func() { s.MTU = &f.mtu.N })
	set("seed", func() { s.Seed = &f.seedValue })
	set("nqb", func() { s.NQB = &f.nqb })
	set("ecn", func() { s.ECN = &f.ecn })
	set("codel-interval", func() { s.Interval = &f.interval.D })
	set("ce-threshold", func() { s.CEThreshold = &f.ceThreshold.D })
	set("ce-threshold-selector", func() { s.CESelector = &f.ceSelector })
	set("flows", func() { s.Flows = &f.flows.N })
	set("quantum", func() { s.Quantum = &f.quantum.N })
	set("drop-batch", func() { s.DropBatch = &f.dropBatch.N })
	set("bytemode", func() { s.Bytemode = &f.bytemode })
	set("dq-rate-estimator", func() { s.DQRateEstimator = &f.dqRate })
	set("queue-protection", func() { s.QueueProtection = &f.qprot })
	set("maxth", func() { s.MaxTh = &f.maxTh.D })
	set("jitter", func() { s.Jitter = (*instance.Jitter)(&f.jitter) })
	set("up-jitter", func() { s.UpJitter = (*instance.Jitter)(&f.upJitter) })
	set("down-jitter", func() { s.DownJitter = (*instance.Jitter)(&f.downJitter) })
	set("aggregate", func() { s.Aggregate = (*instance.Aggregate)(&f.agg) })
	set("up-aggregate", func() { s.UpAggregate = (*instance.Aggregate)(&f.upAgg) })
	set("down-aggregate", func() { s.DownAggregate = (*instance.Aggregate)(&f.downAgg) })
	return s
}

// direction returns the link and queue configuration for one direction:
// "up" or "down" with bidir flags, "" for the single direction of replay
// (or both directions' shared settings). It reads a rate trace file if one
// is named, so call it once per direction.
func (f *linkFlags) direction(name string) (shaper.Config, aqm.Spec, error) {
	if name != "" && !f.bidir {
		return shaper.Config{}, aqm.Spec{}, fmt.Errorf("link direction %q: this command has one direction", name)
	}
	d, err := f.settings().Direction(name)
	if err != nil {
		return shaper.Config{}, aqm.Spec{}, f.flagNamed(err)
	}
	return d.Link, d.Queue, nil
}

// hopConfig builds both directions of a live hop from the link flags.
func (f *linkFlags) hopConfig(name string) (hop.Config, error) {
	c, err := f.settings().Resolve(name)
	return c, f.flagNamed(err)
}

// warnings are the library's words on flags without effect (see
// instance.Settings.Warnings), in flag terms.
func (f *linkFlags) warnings() []string { return f.settings().Warnings() }

// keyFlags maps the instance.Settings keys that are not spelled as
// their flag.
var keyFlags = map[string]string{"drop-on-overload": "overload", "drop-enqueue": "drop-at"}

// flagFor names the flag of a Settings key.
func flagFor(key string) string {
	if f, ok := keyFlags[key]; ok {
		return f
	}
	return key
}

// flagNamed rewrites an error of the library about a setting so that it
// names the flag: --tupdate: 10s not in 1µs..4.294967295s.
func (f *linkFlags) flagNamed(err error) error {
	var fe *instance.FieldError
	var ce *aqm.ConfigError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe) && (fe.Field == "max-rtt" || fe.Field == "typical-rtt"):
		return fmt.Errorf("%s: %w", f.tuneFlags(), fe.Err)
	case errors.As(err, &fe):
		return fmt.Errorf("--%s: %w", flagFor(fe.Field), fe.Err)
	case errors.As(err, &ce):
		key, s := instance.ErrorKey(err), f.settings()
		switch {
		case s.Tunes(key):
			return fmt.Errorf("%s: %s derived from them: %s", f.tuneFlags(), flagFor(key), ce.Range())
		case s.Has(key):
			return fmt.Errorf("--%s: %s", flagFor(key), ce.Range())
		}
		return fmt.Errorf("--%s (default): %s", flagFor(key), ce.Range())
	}
	return err
}

// tuneFlags names the auto-tuning flags given, with their values, for errors.
func (f *linkFlags) tuneFlags() string {
	var s []string
	if f.given("max-rtt") {
		s = append(s, "--max-rtt "+f.maxRTT.String())
	}
	if f.given("typical-rtt") {
		s = append(s, "--typical-rtt "+f.typicalRTT.String())
	}
	return strings.Join(s, " ")
}
