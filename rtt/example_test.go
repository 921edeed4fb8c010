package rtt_test

import (
	"fmt"

	"github.com/pi2hop/pi2hop/rtt"
)

// echo is an IPv4 ICMP echo request (or reply) between 10.0.0.1 (the
// client) and 10.0.1.1, identifier 7, sequence number 1.
func echo(reply bool) []byte {
	p := []byte{
		0x45, 0, 0, 28, 0, 0, 0x40, 0, 64, 1, 0, 0,
		10, 0, 0, 1, 10, 0, 1, 1,
		8, 0, 0, 0, 0, 7, 0, 1,
	}
	if reply {
		copy(p[12:], []byte{10, 0, 1, 1, 10, 0, 0, 1})
		p[20] = 0
	}
	return p
}

// The owner feeds every packet with its direction and time; a reader
// gets a snapshot. Here the client pings the server: the request goes up
// at 0 ms and the reply comes down 20 ms later, one sample of the server
// half.
func Example() {
	t, err := rtt.NewTable(rtt.DefaultConfig)
	if err != nil {
		panic(err)
	}
	t.Packet(echo(false), rtt.Up, 0)
	t.Packet(echo(true), rtt.Down, 20_000_000)

	s := rtt.NewSnapshot(t) // the reader's, made once
	t.CopyTo(s, 20_000_000) // on the owner, when a reader asks
	for _, f := range s.Flows() {
		fmt.Println(f.Client, f.Server, f.Method, f.Status)
		fmt.Println("server half p50", f.ServerHalf.P50Ms, "ms; client half samples", f.ClientHalf.N)
	}
	// Output:
	// 10.0.0.1:7 10.0.1.1:7 icmp-echo measured
	// server half p50 20 ms; client half samples 0
}
