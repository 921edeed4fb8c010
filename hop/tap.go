package hop

import "github.com/pi2hop/pi2hop/shaper"

// Dir is a direction through the hop.
type Dir uint8

const (
	Up   Dir = iota // client to server: read from the client-side device
	Down            // server to client
)

func (d Dir) String() string {
	if d == Up {
		return "up"
	}
	return "down"
}

// TapPoint is where on the path a tapped packet was seen.
type TapPoint uint8

const (
	TapIn   TapPoint = iota // read from the input device, before the queue
	TapOut                  // written to the output device (marks applied)
	TapDrop                 // dropped: queue, link loss, no buffer or write error
)

func (p TapPoint) String() string {
	switch p {
	case TapIn:
		return "in"
	case TapOut:
		return "out"
	}
	return "drop"
}

// Tap sees packets at the in, out and drop points of both directions, for
// captures (pcap.NewHopTap makes one). It is called on the owner
// goroutines, on the hot path: it must not block, and it must copy what
// it keeps (pkt is reused at once). dir is int(Up) or int(Down) and point
// int(TapIn), int(TapOut) or int(TapDrop): plain integers, so pcap, which
// sits below hop, can implement Tap without importing hop. at is the
// hop's clock (ns). ev is nil at TapIn; at TapDrop for a packet the queue
// refused, ev carries the verdict with Deq and Dep zero.
type Tap interface {
	Packet(dir, point int, at int64, pkt []byte, ev *shaper.Event)
}
