package main

import (
	"fmt"

	"github.com/pi2hop/pi2hop/internal/flagvalue"
	"github.com/pi2hop/pi2hop/invoker"
	"github.com/pi2hop/pi2hop/pcap"
	"github.com/spf13/pflag"
)

// captureFlags are --capture, --snaplen and --capture-max-size, shared by
// run, shell, lab and replay.
type captureFlags struct {
	path    string
	snaplen int
	maxSize flagvalue.Size
}

func addCaptureFlags(fs *pflag.FlagSet) *captureFlags {
	c := &captureFlags{maxSize: flagvalue.Size{Max: 1 << 40}}
	fs.StringVar(&c.path, "capture", "", "write an annotated pcapng `FILE`: one interface per tap (up-in, up-out, up-drop, down-...), each decision as a packet comment")
	fs.IntVar(&c.snaplen, "snaplen", 128, "bytes of each packet to capture, from the IP header on")
	fs.Var(&c.maxSize, "capture-max-size", "rotate the capture before a file passes this `SIZE` (tc units: 100m); FILE.1, FILE.2, ... follow")
	return c
}

// open starts the capture, or returns nil when --capture was not given.
// timeOffset turns the caller's clock (monotonic or virtual ns) into Unix ns.
func (c *captureFlags) open(comment string, timeOffset int64) (*pcap.Capture, error) {
	if c.path == "" {
		return nil, nil
	}
	owner, err := invoker.FromEnv()
	if err != nil {
		return nil, err
	}
	opt := pcap.Options{
		Snaplen:    c.snaplen,
		MaxSize:    int64(c.maxSize.Bytes),
		Comment:    comment,
		TimeOffset: timeOffset,
		Owner:      owner,
	}
	if err := opt.Validate(); err != nil {
		return nil, fmt.Errorf("--%w", err)
	}
	capt, err := pcap.NewCapture(c.path, opt)
	if err != nil {
		return nil, fmt.Errorf("--capture: %w", err)
	}
	return capt, nil
}
