package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/spf13/pflag"
)

// Defaults for the link flags: a 10 Mbit/s bottleneck like the one Apple
// throttles macOS Internet Sharing to in its L4S demo (WWDC23), adding no
// delay or loss of its own, with sch_dualpi2's defaults for the AQM.
const (
	defaultRate = 10_000_000 // bit/s
	defaultMTU  = 1500       // bytes: TUN devices carry IP packets, no L2 header
	defaultSeed = 1
	// defaultFIFOLimit is the FIFO's buffer when neither --limit nor
	// --memlimit is given: Linux's default txqueuelen, i.e. the deep
	// buffer of a router without queue management.
	defaultFIFOLimit = 1000
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
}

// addLinkFlags declares the link and AQM flags on fs. With bidir it also
// declares the per-direction --up-*/--down-* flags.
func addLinkFlags(fs *pflag.FlagSet, bidir bool) *linkFlags {
	def := aqm.DefaultConfig()
	f := &linkFlags{
		fs:                fs,
		bidir:             bidir,
		rate:              rateValue{bps: defaultRate},
		aqmKind:           choiceValue{val: aqm.KindDualPI2, choices: []string{aqm.KindDualPI2, aqm.KindFIFO}},
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
		mtu:               intRangeValue{n: defaultMTU, min: 68, max: 65535},
		upDelay:           durationValue{optional: true},
		downDelay:         durationValue{optional: true},
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
	fs.Var(&f.aqmKind, "aqm", "queue discipline: dualpi2 (RFC 9332, Linux sch_dualpi2) or fifo (tail drop, no AQM)")
	fs.Var(&f.limit, "limit", "queue limit in `packets`, both queues (fifo: default 1000 packets unless --memlimit is given)")
	fs.Var(&f.memlimit, "memlimit", "queue limit in bytes of packet data, tc `size` units (default limit·2·mtu, as the kernel)")
	fs.Var(&f.target, "target", "PI target queue delay")
	fs.Var(&f.tupdate, "tupdate", "PI update interval")
	fs.Var(&f.alpha, "alpha", "PI integral gain in `Hz` (sent as trunc(Hz·256) like tc)")
	fs.Var(&f.beta, "beta", "PI proportional gain in `Hz` (sent as trunc(Hz·256) like tc)")
	fs.Var(&f.coupling, "coupling", "coupling factor k, 1..255: L4S marks with k·p, Classic with p²")
	fs.Var(&f.stepThresh, "step-thresh", "L4S step marking threshold: sojourn `time` (1ms) or L-queue length (3p, 3pkts, 3packets)")
	fs.Var(&f.minQlenStep, "min-qlen-step", "L-queue length (`packets`) below which the step AQM leaves a packet alone")
	fs.Var(&f.overload, "overload", "when k·p > 1: drop (drop_on_overload) or overflow (cap p at 1/k, let the queue grow)")
	fs.Var(&f.dropAt, "drop-at", "apply the PI drop/mark decision at enqueue or dequeue (step marks are always at dequeue)")
	fs.Var(&f.classicProtection, "classic-protection", "Classic queue's WRR weight in `percent`, 0..100")
	fs.Var(&f.ecnMask, "ecn-mask", "what goes to the L4S queue: l4s (ECT(1), CE) or any (ECT(0) too)")
	fs.Var(&f.maxRTT, "max-rtt", "auto-tune target, tupdate, alpha, beta like tc for this largest expected RTT; --target etc. given explicitly still win")
	fs.Var(&f.typicalRTT, "typical-rtt", "auto-tune like tc for this typical RTT (with or without --max-rtt); explicit --target etc. still win")
	fs.Var(&f.mtu, "mtu", "MTU in `bytes`: DualPI2's 2-MTU guard and WRR credit use it")
	fs.Uint64Var(&f.seedValue, "seed", defaultSeed, "seed of the random loss and AQM decisions (same seed, same run)")
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

// direction returns the link and queue configuration for one direction:
// "up" or "down" with bidir flags, "" for the single direction of replay
// (or both directions' shared settings). It reads a rate trace file if one
// is named, so call it once per direction.
func (f *linkFlags) direction(name string) (shaper.Config, aqm.Spec, error) {
	var zero shaper.Config
	if name != "" && name != "up" && name != "down" {
		return zero, aqm.Spec{}, fmt.Errorf("link direction %q: want up or down", name)
	}
	if name != "" && !f.bidir {
		return zero, aqm.Spec{}, fmt.Errorf("link direction %q: this command has one direction", name)
	}
	rate, err := f.rateFor(name)
	if err != nil {
		return zero, aqm.Spec{}, err
	}
	cfg := shaper.Config{Rate: rate, Delay: int64(f.delayFor(name))}
	if f.loss.text != "" {
		if cfg.Loss, err = shaper.ParseLoss(f.loss.text); err != nil {
			return zero, aqm.Spec{}, fmt.Errorf("--loss %q: %w", f.loss.text, err)
		}
	}
	spec, err := f.queueSpec()
	if err != nil {
		return zero, aqm.Spec{}, err
	}
	return cfg, spec, nil
}

// rateFor resolves the rate of one direction. The most specific flag wins
// (--up-rate over --rate); a rate and a rate trace at the same level conflict.
func (f *linkFlags) rateFor(dir string) (shaper.Rate, error) {
	type level struct {
		rateFlag, traceFlag string
		rate                *rateValue
		trace               string
	}
	levels := []level{{"rate", "rate-trace", &f.rate, f.rateTrace}}
	switch dir {
	case "up":
		levels = append([]level{{"up-rate", "up-rate-trace", &f.upRate, f.upRateTrace}}, levels...)
	case "down":
		levels = append([]level{{"down-rate", "down-rate-trace", &f.downRate, f.downRateTrace}}, levels...)
	}
	for _, l := range levels {
		rateGiven, traceGiven := f.given(l.rateFlag), f.given(l.traceFlag)
		switch {
		case rateGiven && traceGiven:
			return nil, fmt.Errorf("--%s and --%s both set the rate: give one", l.rateFlag, l.traceFlag)
		case traceGiven:
			r, err := shaper.LoadRateTrace(l.trace)
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", l.traceFlag, err)
			}
			return r, nil
		case rateGiven:
			return shaper.Const{BitsPerSecond: l.rate.bps}, nil
		}
	}
	return shaper.Const{BitsPerSecond: f.rate.bps}, nil // the default
}

func (f *linkFlags) delayFor(dir string) time.Duration {
	switch {
	case dir == "up" && f.given("up-delay"):
		return f.upDelay.d
	case dir == "down" && f.given("down-delay"):
		return f.downDelay.d
	}
	return f.delay.d
}

// queueSpec builds the queue discipline from --aqm and its knobs.
func (f *linkFlags) queueSpec() (aqm.Spec, error) {
	if f.aqmKind.val == aqm.KindFIFO {
		for _, name := range dualPI2Only {
			if f.given(name) {
				return aqm.Spec{}, fmt.Errorf("--%s configures DualPI2 and means nothing with --aqm fifo", name)
			}
		}
		return aqm.Spec{Kind: aqm.KindFIFO, FIFO: f.fifoConfig()}, nil
	}
	cfg, err := f.dualPI2Config()
	if err != nil {
		return aqm.Spec{}, err
	}
	return aqm.Spec{Kind: aqm.KindDualPI2, DualPI2: cfg}, nil
}

// fifoConfig sizes the FIFO from --limit and --memlimit, or gives it
// defaultFIFOLimit packets when neither is given.
func (f *linkFlags) fifoConfig() aqm.FIFOConfig {
	var c aqm.FIFOConfig
	if f.given("limit") {
		c.Limit = f.limit.n
	}
	if f.given("memlimit") {
		c.ByteLimit = f.memlimit.bytes
	}
	if c.Limit == 0 && c.ByteLimit == 0 {
		c.Limit = defaultFIFOLimit
	}
	return c
}

// dualPI2Config merges the DualPI2 flags over the kernel defaults.
//
// Precedence for the PI parameters: an explicit --target, --tupdate, --alpha
// or --beta always wins; what is not given comes from --max-rtt /
// --typical-rtt auto-tuning (tc's formulas) when either is given, else
// from the kernel defaults. (tc itself lets auto-tuning override
// everything; naming a value on the command line and having it ignored
// would surprise.)
func (f *linkFlags) dualPI2Config() (aqm.Config, error) {
	c := aqm.DefaultConfig()
	c.MTU = f.mtu.n
	c.Limit = f.limit.n
	c.MemLimit = aqm.DefaultMemLimit(c.Limit, c.MTU) // as the kernel: follows limit
	if f.given("memlimit") {
		c.MemLimit = f.memlimit.bytes
	}
	c.Target, c.Tupdate = int64(f.target.d), int64(f.tupdate.d)
	c.Alpha, c.Beta = f.alpha.netlink, f.beta.netlink
	if f.given("max-rtt") || f.given("typical-rtt") {
		target, tupdate, alpha, beta, err := aqm.Tune(int64(f.maxRTT.d), int64(f.typicalRTT.d))
		if err != nil {
			return c, fmt.Errorf("%s: %w", f.tuneFlags(), err)
		}
		if !f.given("target") {
			c.Target = target
		}
		if !f.given("tupdate") {
			c.Tupdate = tupdate
		}
		if !f.given("alpha") {
			c.Alpha = alpha
		}
		if !f.given("beta") {
			c.Beta = beta
		}
	}
	c.Coupling = uint8(f.coupling.n)
	c.StepInPackets = f.stepThresh.inPkts
	c.StepThresh = f.stepThresh.ns
	if c.StepInPackets {
		c.StepThresh = int64(f.stepThresh.packets)
	}
	c.MinQlenStep = f.minQlenStep.n
	c.DropOverload = f.overload.val == "drop"
	c.DropEnqueue = f.dropAt.val == "enqueue"
	c.ClassicProtection = uint8(f.classicProtection.n)
	c.ECNMask = 1
	if f.ecnMask.val == "any" {
		c.ECNMask = 3
	}
	if err := c.Validate(); err != nil {
		return c, f.validateError(err)
	}
	return c, nil
}

// validateError names the flag in aqm's `config "tupdate": 10s not in
// 1µs..4.294967295s`, so the message points at what to change.
func (f *linkFlags) validateError(err error) error {
	rest, ok := strings.CutPrefix(err.Error(), `config "`)
	name, why, found := strings.Cut(rest, `":`)
	flag := strings.ReplaceAll(name, "_", "-")
	switch {
	case !ok || !found || f.fs.Lookup(flag) == nil:
		return fmt.Errorf("dualpi2 flags: %w", err)
	case f.given(flag):
		return fmt.Errorf("--%s:%s", flag, why)
	case f.given("max-rtt") || f.given("typical-rtt"):
		return fmt.Errorf("%s: %s derived from them:%s", f.tuneFlags(), flag, why)
	}
	return fmt.Errorf("--%s (default):%s", flag, why)
}

// dualPI2Only are the flags that configure DualPI2 and mean nothing to a FIFO.
var dualPI2Only = []string{"target", "tupdate", "alpha", "beta", "coupling", "step-thresh",
	"min-qlen-step", "overload", "drop-at", "classic-protection", "ecn-mask", "max-rtt", "typical-rtt"}

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
