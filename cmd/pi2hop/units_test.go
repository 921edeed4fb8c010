package main

import (
	"strings"
	"testing"

	"github.com/pi2hop/pi2hop/instance"
	"github.com/pi2hop/pi2hop/internal/cli"
	"github.com/spf13/pflag"
)

// bareMeaning says, for every flag that takes a value, what the bare
// number 10 does: refused (err, the words of the refusal), or read with
// tc's, netem's or the tool's own meaning (print, how the value prints
// back). A number that names nothing (a file, an address) reads as text.
var bareMeaning = map[string]struct{ print, err string }{
	// tc(8) reads a bare rate as bit/s: nobody means a 10 bit/s link.
	"rate": {err: "give a unit, e.g. 10mbit"}, "up-rate": {err: "give a unit"}, "down-rate": {err: "give a unit"},
	"max-rate": {err: "give a unit"}, "min-rate": {err: "give a unit"},
	// tc(8) reads a bare time as µs: refused, only 0 is taken.
	"delay": {err: "give a unit, e.g. 10ms"}, "up-delay": {err: "give a unit"}, "down-delay": {err: "give a unit"},
	"target": {err: "give a unit"}, "tupdate": {err: "give a unit"}, "max-rtt": {err: "give a unit"},
	"typical-rtt": {err: "give a unit"}, "codel-interval": {err: "give a unit"}, "ce-threshold": {err: "give a unit"},
	"maxth": {err: "give a unit"}, "rtt": {err: "give a unit"}, "rtts": {err: "give a unit"}, "duration": {err: "give a unit"},
	"warmup": {err: "give a unit"}, "every": {err: "give a unit"}, "bin": {err: "give a unit"}, "wake-for": {err: "give a unit"}, "lease-time": {err: "give a unit"},
	"keyframe-every": {err: "give a unit"}, "budget": {err: "give a unit"}, "playout": {err: "give a unit"},
	"wait-interfaces": {err: "give a unit"},
	"cpu-latency":     {err: `want "off" or a duration`},
	"step-thresh":     {err: "want a duration like 1ms or a packet count like 3p"},
	"jitter":          {err: "want AMOUNT[,DIST] like 5ms"}, "up-jitter": {err: "want AMOUNT"}, "down-jitter": {err: "want AMOUNT"},
	"aggregate": {err: "want INTERVAL,SIZE"}, "up-aggregate": {err: "want INTERVAL,SIZE"}, "down-aggregate": {err: "want INTERVAL,SIZE"},
	"mtu":     {err: "must be in "}, // bytes, as ip-link(8), but 10 is below every MTU
	"quantum": {err: "want a number of bytes in 256..1048576"},
	"profile": {err: "want one of"}, "direction": {err: "want one of"},
	"aqm": {err: "want one of"}, "overload": {err: "want one of"}, "drop-at": {err: "want one of"},
	"ecn-mask": {err: "want one of"}, "tun": {err: "want one of"}, "log-format": {err: "want one of"}, "docsis-classic": {err: "want one of"},
	"plot-format": {err: "unknown format"},
	// lab app: command lines and variant names are text; --cross counts downloads.
	"client": {print: "10"}, "server": {print: "10"}, "variants": {print: "[10]"}, "variant": {print: "[10]"}, "cross": {print: "10"},
	// An ECN path fault is a kind's name; a number names none.
	"ecn-fault": {err: "unknown fault kind"}, "up-ecn-fault": {err: "unknown fault kind"}, "down-ecn-fault": {err: "unknown fault kind"},
	// netem reads "loss 10" as 10 %.
	"loss": {print: "10"}, "up-loss": {print: "10"}, "down-loss": {print: "10"},
	// tc(8) reads a bare size as bytes, as here.
	"memlimit": {print: "10b"}, "capture-max-size": {print: "10b"}, "windows": {print: "[10]"},
	// Counts: tc's limit, flows, drop_batch, min_qlen_step are packets
	// or buckets; classic_protection a percentage; alpha and beta Hz.
	"limit": {print: "10"}, "fifo-limit": {print: "10"}, "flows": {print: "10"}, "drop-batch": {print: "10"},
	"min-qlen-step": {print: "10"}, "classic-protection": {print: "10"}, "coupling": {print: "10"},
	"alpha": {print: "10"}, "beta": {print: "10"},
	// Counts of our own: bytes of a packet (tcpdump -s), frames, runs.
	"snaplen": {print: "10"}, "probes": {print: "10"}, "fps": {print: "10"}, "repeat": {print: "10"}, "bulk": {print: "10"}, "seed": {print: "10"},
	"top": {print: "10"}, // stats --flows: flows per direction
	// Not quantities: names, files, addresses, words.
	"name": {print: "10"}, "label": {print: "10"}, "capture": {print: "10"}, "trace": {print: "10"}, "pcap": {print: "10"},
	"pcap-out": {print: "10"}, "rate-trace": {print: "10"}, "up-rate-trace": {print: "10"}, "down-rate-trace": {print: "10"},
	"plot": {print: "10"}, "out": {print: "10"}, "ingress": {print: "[10]"}, "egress": {print: "[10]"}, "dns": {print: "[10]"},
	"lan": {print: "10"}, "wan": {print: "10"}, "subnet": {print: "10"}, "user": {print: "10"}, "metrics": {print: "10"},
	"to": {print: "10"}, "listen": {print: "10"}, "bind": {print: "10"}, "cc": {print: "10"}, "ecn": {print: "10"},
	"ce-threshold-selector": {print: "10"}, "tap": {print: "10"}, "serve": {print: "10"}, "web-token": {print: "10"}, "config": {print: "10"},
}

// bareByType is what a bare 10 means to a setting of the table (a knob
// just added) by its value's type: tc's meaning for that unit.
var bareByType = map[string]struct{ print, err string }{
	"duration": {err: "give a unit"}, "packets": {print: "10"}, "size": {print: "10b"}, "Hz": {print: "10"}, "int": {print: "10"},
}

// TestBareNumbers gives 10 to every flag of every command that takes a
// value: it is refused with the forms, or means what tc/netem (or the
// table above) say. A new value flag fails here until its meaning is
// decided.
func TestBareNumbers(t *testing.T) {
	walkCommands(func(c *cli.Command) {
		fs, _ := app.Declare(c)
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Deprecated != "" || f.NoOptDefVal != "" {
				return
			}
			want, ok := bareMeaning[f.Name]
			if st, setting := instance.Lookup(f.Name); !ok && setting {
				// A setting of the table: its value's type decides, as
				// for the settings of that type above.
				want, ok = bareByType[st.Bind(&instance.Settings{}).Type()]
			}
			if !ok {
				t.Errorf("%s --%s 10: add what a bare number means to bareMeaning", c.Path(), f.Name)
				return
			}
			if f.Name == "coupling" && c.Path() == "analyze" {
				want = struct{ print, err string }{print: "10"} // a float k, as tc's coupling_factor
			}
			err := f.Value.Set("10")
			switch {
			case want.err != "" && (err == nil || !strings.Contains(err.Error(), want.err)):
				t.Errorf("%s --%s 10: %v, want refused with %q", c.Path(), f.Name, err, want.err)
			case want.err == "" && err != nil:
				t.Errorf("%s --%s 10: %v, want it read as %s", c.Path(), f.Name, err, want.print)
			case want.err == "" && f.Value.String() != want.print:
				t.Errorf("%s --%s 10 reads as %q, want %q", c.Path(), f.Name, f.Value.String(), want.print)
			}
		})
	})
}

// What a bare number means reaches the link: --loss 10 loses 10 % as
// netem's loss 10, --limit 10 holds 10 packets, --memlimit 10 10 bytes.
func TestBareNumbersMeaning(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	lf := addLinkFlags(fs, true)
	if err := fs.Parse([]string{"--loss", "10", "--limit", "10", "--memlimit", "10", "--up-loss", "0.5"}); err != nil {
		t.Fatal(err)
	}
	c, err := lf.hopConfig("t")
	if err != nil {
		t.Fatal(err)
	}
	str := func(v any) string { return v.(interface{ String() string }).String() }
	if got := str(c.Down.Link.Loss); got != "10%" {
		t.Errorf("--loss 10: downlink loss %s, want 10%%", got)
	}
	if got := str(c.Up.Link.Loss); got != "0.5%" {
		t.Errorf("--up-loss 0.5: uplink loss %s, want 0.5%%", got)
	}
	if q := c.Up.Queue.DualPI2; q.Limit != 10 || q.MemLimit != 10 {
		t.Errorf("--limit 10 --memlimit 10: limit %d packets, memlimit %d bytes; want 10 and 10", q.Limit, q.MemLimit)
	}
}
