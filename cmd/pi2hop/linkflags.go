package main

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/hop/instance"
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

	rate      rateValue
	delay     durationValue
	loss      lossValue
	rateTrace string

	// Per direction, only with bidir; they override the shared flags.
	upRate, downRate           rateValue
	upDelay, downDelay         durationValue
	upRateTrace, downRateTrace string

	aqmKind           choiceValue
	limit             countValue
	memlimit          sizeValue
	target, tupdate   durationValue
	alpha, beta       gainValue
	coupling          intRangeValue
	stepThresh        stepValue
	minQlenStep       countValue
	overload          choiceValue
	dropAt            choiceValue
	classicProtection intRangeValue
	ecnMask           choiceValue
	maxRTT            durationValue
	typicalRTT        durationValue
	mtu               intRangeValue
	seedValue         uint64

	// The other queue disciplines (codel, pie, fq_codel, docsis) and
	// the link's shape (jitter, aggregation bursts).
	nqb, ecn, bytemode, dqRate, qprot bool
	interval, ceThreshold, maxTh      durationValue
	ceSelector                        string
	flows, quantum, dropBatch         countValue
	jitter, upJitter, downJitter      jitterValue
	agg, upAgg, downAgg               aggregateValue
}

// addLinkFlags declares the link and AQM flags on fs. With bidir it also
// declares the per-direction --up-*/--down-* flags.
func addLinkFlags(fs *pflag.FlagSet, bidir bool) *linkFlags {
	def := aqm.DefaultConfig()
	f := &linkFlags{
		fs:                fs,
		bidir:             bidir,
		rate:              rateValue{bps: instance.DefaultRate},
		aqmKind:           choiceValue{val: aqm.KindDualPI2, choices: aqm.Kinds},
		limit:             countValue{n: def.Limit, min: 1, max: math.MaxUint32},
		memlimit:          sizeValue{max: math.MaxUint32},
		target:            durationValue{d: time.Duration(def.Target)},
		tupdate:           durationValue{d: time.Duration(def.Tupdate), min: time.Microsecond},
		alpha:             gainValue{netlink: def.Alpha},
		beta:              gainValue{netlink: def.Beta},
		coupling:          intRangeValue{n: int(def.Coupling), min: 1, max: 255},
		stepThresh:        stepValue{ns: def.StepThresh},
		minQlenStep:       countValue{n: def.MinQlenStep, max: math.MaxUint32},
		overload:          choiceValue{val: "drop", choices: []string{"drop", "overflow"}, aliases: map[string]string{"drop_on_overload": "drop"}},
		dropAt:            choiceValue{val: "dequeue", choices: []string{"enqueue", "dequeue"}, aliases: map[string]string{"drop_enqueue": "enqueue", "drop_dequeue": "dequeue"}},
		classicProtection: intRangeValue{n: int(def.ClassicProtection), max: 100, unit: "%"},
		ecnMask:           choiceValue{val: "l4s", choices: []string{"l4s", "any"}, aliases: map[string]string{"l4s_ect": "l4s", "any_ect": "any"}},
		maxRTT:            durationValue{min: time.Microsecond, optional: true},
		typicalRTT:        durationValue{min: time.Microsecond, optional: true},
		mtu:               intRangeValue{n: instance.DefaultMTU, min: 68, max: 65535},
		upDelay:           durationValue{optional: true},
		downDelay:         durationValue{optional: true},
		interval:          durationValue{d: aqm.DefaultCodelInterval, min: time.Microsecond},
		ceThreshold:       durationValue{optional: true},
		maxTh:             durationValue{d: aqm.DefaultDOCSISMaxTh, min: time.Microsecond},
		flows:             countValue{n: aqm.DefaultFQCodelFlows, min: 1, max: 65536},
		quantum:           countValue{n: aqm.DefaultPschedMTU, min: 256, max: 1 << 20},
		dropBatch:         countValue{n: aqm.DefaultFQCodelDropBatch, min: 1, max: math.MaxUint32},
	}
	if def.DropEnqueue {
		f.dropAt.val = "enqueue"
	}
	if !def.DropOverload {
		f.overload.val = "overflow"
	}
	if def.ECNMask == 3 {
		f.ecnMask.val = "any"
	}
	if def.StepInPackets {
		f.stepThresh = stepValue{packets: uint32(def.StepThresh), inPkts: true}
	}

	fs.Var(&f.rate, "rate", "link `rate` in tc units: bit, kbit, mbit, gbit, or bps, kbps, mbps (bytes/s)")
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
func (f *linkFlags) mtuBytes() int { return f.mtu.n }

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
	set("rate", func() { s.Rate = &f.rate.bps })
	set("up-rate", func() { s.UpRate = &f.upRate.bps })
	set("down-rate", func() { s.DownRate = &f.downRate.bps })
	set("rate-trace", func() { s.RateTrace = &f.rateTrace })
	set("up-rate-trace", func() { s.UpRateTrace = &f.upRateTrace })
	set("down-rate-trace", func() { s.DownRateTrace = &f.downRateTrace })
	set("delay", func() { s.Delay = &f.delay.d })
	set("up-delay", func() { s.UpDelay = &f.upDelay.d })
	set("down-delay", func() { s.DownDelay = &f.downDelay.d })
	set("loss", func() { s.Loss = &f.loss.text })
	set("aqm", func() { s.AQM = &f.aqmKind.val })
	set("limit", func() { s.Limit = &f.limit.n })
	set("memlimit", func() { s.MemLimit = &f.memlimit.bytes })
	set("target", func() { s.Target = &f.target.d })
	set("tupdate", func() { s.Tupdate = &f.tupdate.d })
	set("alpha", func() { s.Alpha = &f.alpha.netlink })
	set("beta", func() { s.Beta = &f.beta.netlink })
	set("coupling", func() { c := uint8(f.coupling.n); s.Coupling = &c })
	set("step-thresh", func() {
		s.StepThresh = &instance.Step{Time: time.Duration(f.stepThresh.ns), Packets: f.stepThresh.packets, InPackets: f.stepThresh.inPkts}
	})
	set("min-qlen-step", func() { s.MinQlenStep = &f.minQlenStep.n })
	set("overload", func() { b := f.overload.val == "drop"; s.DropOverload = &b })
	set("drop-at", func() { b := f.dropAt.val == "enqueue"; s.DropEnqueue = &b })
	set("classic-protection", func() { c := uint8(f.classicProtection.n); s.ClassicProtection = &c })
	set("ecn-mask", func() {
		m := uint8(1)
		if f.ecnMask.val == "any" {
			m = 3
		}
		s.ECNMask = &m
	})
	set("max-rtt", func() { s.MaxRTT = &f.maxRTT.d })
	set("typical-rtt", func() { s.TypicalRTT = &f.typicalRTT.d })
	set("mtu", func() { s.MTU = &f.mtu.n })
	set("seed", func() { s.Seed = &f.seedValue })
	set("nqb", func() { s.NQB = &f.nqb })
	set("ecn", func() { s.ECN = &f.ecn })
	set("codel-interval", func() { s.Interval = &f.interval.d })
	set("ce-threshold", func() { s.CEThreshold = &f.ceThreshold.d })
	set("ce-threshold-selector", func() { s.CESelector = &f.ceSelector })
	set("flows", func() { s.Flows = &f.flows.n })
	set("quantum", func() { s.Quantum = &f.quantum.n })
	set("drop-batch", func() { s.DropBatch = &f.dropBatch.n })
	set("bytemode", func() { s.Bytemode = &f.bytemode })
	set("dq-rate-estimator", func() { s.DQRateEstimator = &f.dqRate })
	set("queue-protection", func() { s.QueueProtection = &f.qprot })
	set("maxth", func() { s.MaxTh = &f.maxTh.d })
	set("jitter", func() { s.Jitter = &f.jitter.j })
	set("up-jitter", func() { s.UpJitter = &f.upJitter.j })
	set("down-jitter", func() { s.DownJitter = &f.downJitter.j })
	set("aggregate", func() { s.Aggregate = &f.agg.a })
	set("up-aggregate", func() { s.UpAggregate = &f.upAgg.a })
	set("down-aggregate", func() { s.DownAggregate = &f.downAgg.a })
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
