package aqm

import (
	"fmt"
	"strconv"
	"strings"
)

// TCParam is one parameter of a queue discipline as `tc qdisc show`
// prints it: a keyword and its value in tc's units ("target" "15ms"), or
// a keyword that stands alone ("l4s_ect"), whose Value is "".
type TCParam struct {
	Name, Value string
}

// GainReadBack is the DualPI2 gain nl (Hz·256, as sent over netlink) as
// the kernel dumps it back: it keeps the gain scaled to its own units
// (ScaleGain) and scales it back with truncation, so tc shows a little
// less than was set (alpha 41, 0.16015625 Hz, reads 0.15625).
func GainReadBack(nl uint32) float64 { return GainHz(UnscaleGain(ScaleGain(nl))) }

// TCParams returns every parameter in force of s's kind, with tc's
// keywords, units and order (iproute2's q_dualpi2.c, q_codel.c, q_pie.c,
// q_fq_codel.c print_opt), so a `set` can be confirmed as tc would show
// it. Gains print as the kernel dumps them back (alpha 41 reads
// 0.156250). The FIFO prints as pfifo (and its byte limit as bfifo's).
// docsis, which tc has not, prints the coupled core's dualpi2 keywords,
// then the ramp's and queue protection's under their RFC 9956/9957 names.
// A parameter tc shows only when set (ce_threshold, codel's and pie's
// ecn) is left out when it is not, as tc leaves it out.
func (s Spec) TCParams() []TCParam {
	var p []TCParam
	add := func(name, format string, a ...any) {
		p = append(p, TCParam{name, fmt.Sprintf(format, a...)})
	}
	word := func(name string) { p = append(p, TCParam{Name: name}) }
	either := func(on bool, yes, no string) {
		if on {
			word(yes)
		} else {
			word(no)
		}
	}
	ecnMask := func(m uint8) {
		either(m == 1, "l4s_ect", "any_ect") // 2 is shown as any_ect too
	}
	gain := func(nl uint32) string { return fmt.Sprintf("%f", GainReadBack(nl)) }
	switch s.Kind {
	case KindDualPI2:
		c := s.DualPI2
		add("limit", "%dp", c.Limit)
		add("memlimit", "%dB", c.MemLimit)
		add("target", "%s", TCTime(c.Target))
		add("tupdate", "%s", TCTime(c.Tupdate))
		add("alpha", "%s", gain(c.Alpha))
		add("beta", "%s", gain(c.Beta))
		if c.StepInPackets {
			add("step_thresh", "%dp", c.StepThresh)
		} else {
			add("step_thresh", "%s", TCTime(c.StepThresh))
		}
		add("min_qlen_step", "%dp", c.MinQlenStep)
		add("coupling_factor", "%d", c.Coupling)
		either(c.DropOverload, "drop_on_overload", "overflow")
		either(c.DropEnqueue, "drop_enqueue", "drop_dequeue")
		add("classic_protection", "%d%%", c.ClassicProtection)
		ecnMask(c.ECNMask)
		word("split_gso")
		if c.NQB {
			word("nqb")
		}
	case KindFIFO:
		if c := s.FIFO; c.Limit > 0 {
			add("limit", "%dp", c.Limit)
		}
		if c := s.FIFO; c.ByteLimit > 0 {
			add("byte_limit", "%s", TCSize(c.ByteLimit))
		}
	case KindCoDel:
		c := s.CoDel
		add("limit", "%dp", c.Limit)
		add("target", "%s", TCTime(c.Target))
		if c.CEThreshold != CEThresholdOff {
			add("ce_threshold", "%s", TCTime(c.CEThreshold))
		}
		add("interval", "%s", TCTime(c.Interval))
		if c.ECN {
			word("ecn")
		}
	case KindPIE:
		c := s.PIE
		add("limit", "%dp", c.Limit)
		add("target", "%s", TCTime(c.Target))
		add("tupdate", "%s", TCTime(c.Tupdate))
		add("alpha", "%d", c.Alpha)
		add("beta", "%d", c.Beta)
		if c.ECN {
			word("ecn")
		}
		if c.Bytemode {
			word("bytemode")
		}
		if c.DQRateEstimator {
			word("dq_rate_estimator")
		}
	case KindFQCodel:
		c := s.FQCodel
		add("limit", "%dp", c.Limit)
		add("flows", "%d", c.Flows)
		add("quantum", "%d", c.Quantum)
		add("target", "%s", TCTime(c.Target))
		if c.CEThreshold != CEThresholdOff {
			add("ce_threshold", "%s", TCTime(c.CEThreshold))
			if c.CEMask != 0 {
				add("ce_threshold_selector", "%#x/%#x", c.CESelector, c.CEMask)
			}
		}
		add("interval", "%s", TCTime(c.Interval))
		add("memory_limit", "%s", TCSize(c.MemoryLimit))
		if c.ECN {
			word("ecn")
		}
		add("drop_batch", "%d", c.DropBatch)
	case KindDOCSIS:
		c := s.DOCSIS
		d := c.DualPI2
		add("limit", "%dp", d.Limit)
		add("memlimit", "%dB", d.MemLimit)
		add("target", "%s", TCTime(d.Target))
		add("tupdate", "%s", TCTime(d.Tupdate))
		add("alpha", "%s", gain(d.Alpha))
		add("beta", "%s", gain(d.Beta))
		add("coupling_factor", "%d", d.Coupling)
		add("classic_protection", "%d%%", d.ClassicProtection)
		ecnMask(d.ECNMask)
		add("maxth", "%s", TCTime(c.MaxTh))
		add("lg_range", "%d", c.LgRange)
		if c.Floor > 0 {
			add("floor", "%s", TCTime(c.Floor))
		}
		if c.NQB {
			word("nqb")
		}
		either(c.QProt.On, "queue_protection", "no_queue_protection")
	}
	return p
}

// TCLine is TCParams as tc prints them after the kind: "limit 10000p
// memlimit 30000000B target 15ms ...".
func TCLine(p []TCParam) string {
	var b strings.Builder
	for i, x := range p {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x.Name)
		if x.Value != "" {
			b.WriteByte(' ')
			b.WriteString(x.Value)
		}
	}
	return b.String()
}

// TCTime prints a duration (ns) as tc's sprint_time64 does: three
// significant digits in the largest unit of s, ms, us that it reaches,
// else whole ns ("15ms", "1.5ms", "500us").
func TCTime(ns int64) string {
	f := float64(ns)
	switch {
	case ns >= 1e9:
		return strconv.FormatFloat(f/1e9, 'g', 3, 64) + "s"
	case ns >= 1e6:
		return strconv.FormatFloat(f/1e6, 'g', 3, 64) + "ms"
	case ns >= 1e3:
		return strconv.FormatFloat(f/1e3, 'g', 3, 64) + "us"
	}
	return strconv.FormatInt(ns, 10) + "ns"
}

// TCSize prints a byte count as tc's sprint_size does: in Mb or Kb
// (powers of 1024) when it is a whole number of them, else in b ("32Mb",
// "1500b").
func TCSize(b uint64) string {
	switch {
	case b >= 1<<20 && b%(1<<20) == 0:
		return strconv.FormatUint(b>>20, 10) + "Mb"
	case b >= 1<<10 && b%(1<<10) == 0:
		return strconv.FormatUint(b>>10, 10) + "Kb"
	}
	return strconv.FormatUint(b, 10) + "b"
}
