package shaper

// Unlimited is a link with no serialisation time: a packet leaves the
// link the instant it starts, so the queue never builds and the AQM never
// acts. The delay line and loss model still apply. It is `--rate
// unlimited`, the Mac's `ifconfig <if> tbr 0`: the hop stops being the
// bottleneck without being taken out of the path.
type Unlimited struct{}

// Finish returns start: no time on the wire.
func (Unlimited) Finish(start int64, n int) int64 { return start }

// String prints the rate as --rate takes it.
func (Unlimited) String() string { return UnlimitedName }

// UnlimitedName is the word --rate takes for Unlimited.
const UnlimitedName = "unlimited"
