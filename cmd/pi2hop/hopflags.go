package main

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/pi2hop/pi2hop/hop"
	"github.com/spf13/pflag"
)

// hopConfig builds both directions of a live hop from the link flags:
// "up" is client to server (LAN to WAN), "down" the reverse.
func (f *linkFlags) hopConfig(name string) (hop.Config, error) {
	upLink, upQueue, err := f.direction("up")
	if err != nil {
		return hop.Config{}, err
	}
	downLink, downQueue, err := f.direction("down")
	if err != nil {
		return hop.Config{}, err
	}
	return hop.Config{
		Name: name,
		Up:   hop.DirConfig{Link: upLink, Queue: upQueue},
		Down: hop.DirConfig{Link: downLink, Queue: downQueue},
		Seed: f.seed(),
		MTU:  f.mtuBytes(),
	}, nil
}

// liveFixed are link flags a running hop cannot change.
var liveFixed = []string{"mtu", "seed", "aqm"}

// parseLinkArgs parses the link flags among args, ignoring every other
// flag (a command's own, such as --lan) and stopping at "--".
func parseLinkArgs(args []string) (*linkFlags, error) {
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[:i]
	}
	fs := pflag.NewFlagSet("link", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.SetOutput(discard{})
	f := addLinkFlags(fs, true)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return f, nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// mergeEdit is what `pi2hop set` does inside the running instance: the
// link flags of the command line it started with (base), then those of
// the set request on top (later flags win), validated as a whole, and the
// difference to the running configuration cur as a hop.Edit.
func mergeEdit(base, set []string, cur hop.Config) (hop.Edit, error) {
	given, err := parseLinkArgs(set)
	if err != nil {
		return hop.Edit{}, err
	}
	var named []string
	given.fs.Visit(func(fl *pflag.Flag) { named = append(named, fl.Name) })
	if len(named) == 0 {
		return hop.Edit{}, fmt.Errorf("no link flag given (e.g. --rate 5mbit, --down-delay 20ms)")
	}
	for _, n := range named {
		if slices.Contains(liveFixed, n) {
			return hop.Edit{}, fmt.Errorf("--%s cannot change while the hop runs: restart it", n)
		}
	}
	merged, err := parseLinkArgs(append(slices.Clip(withoutTail(base)), set...))
	if err != nil {
		return hop.Edit{}, err
	}
	next, err := merged.hopConfig(cur.Name)
	if err != nil {
		return hop.Edit{}, err
	}
	lossGiven := slices.Contains(named, "loss")
	return hop.Edit{
		Up:   dirEdit(cur.Up, next.Up, lossGiven),
		Down: dirEdit(cur.Down, next.Down, lossGiven),
	}, nil
}

// withoutTail drops a command's positional tail ("-- CMD ARGS").
func withoutTail(args []string) []string {
	if i := slices.Index(args, "--"); i >= 0 {
		return args[:i]
	}
	return args
}

// dirEdit is the change from cur to next. Loss models carry state, so the
// loss changes only when --loss was given.
func dirEdit(cur, next hop.DirConfig, lossGiven bool) hop.DirEdit {
	var e hop.DirEdit
	if !reflect.DeepEqual(cur.Link.Rate, next.Link.Rate) {
		e.Rate = next.Link.Rate
	}
	if cur.Link.Delay != next.Link.Delay {
		d := next.Link.Delay
		e.Delay = &d
	}
	if lossGiven {
		e.Loss, e.SetLoss = next.Link.Loss, true
	}
	if !reflect.DeepEqual(cur.Queue, next.Queue) {
		q := next.Queue
		e.Queue = &q
	}
	return e
}

// describeDir says what a direction is, for the start-up log line.
func describeDir(d hop.DirConfig) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v", d.Link.Rate)
	if d.Link.Delay > 0 {
		fmt.Fprintf(&b, " delay %v", fmtDuration(d.Link.Delay))
	}
	if d.Link.Loss != nil {
		fmt.Fprintf(&b, " loss %v", d.Link.Loss)
	}
	fmt.Fprintf(&b, " %s", d.Queue.Kind)
	return b.String()
}
