//go:build linux

package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/pi2hop/pi2hop/aqm"
	"github.com/pi2hop/pi2hop/hop"
	"github.com/pi2hop/pi2hop/netsys"
	"github.com/pi2hop/pi2hop/shaper"
	"github.com/pi2hop/pi2hop/topology"
)

var nFlows = flag.Int("flows", 1000, "concurrent TCP flows of the many-flows figure")

// manyFlows prints how full a shaped 1 Gbit/s link (DualPI2, 10 ms) stays
// with -flows concurrent bulk TCP flows, through the first backend, with
// the per-flow table on and, in the same run, off: the link's busy share
// (the time it was sending), the IP rate it wrote out, both as shares of
// the rate, and how many flows the table counted in that direction.
func (b *bench) manyFlows() error {
	const bps = 1_000_000_000
	be := b.backends[0]
	fmt.Println()
	row(fmt.Sprintf("%d TCP flows at 1 Gbit/s, DualPI2, 10 ms (%s)", *nFlows, be), "busy", "out", "flows", "owner CPU", "drops/s", "marks/s")
	for _, table := range []bool{true, false} {
		d := hop.DirConfig{
			Link:  shaper.Config{Rate: shaper.Const{BitsPerSecond: bps}, Delay: int64(10 * time.Millisecond)},
			Queue: aqm.Spec{Kind: aqm.KindDualPI2, DualPI2: aqm.DefaultConfig()},
		}
		p, err := topology.NewPair(context.Background(), b.prefix+"f", hop.Config{Name: b.prefix + "f", Up: d, Down: d, Seed: 1,
			Spin: *spin, Priority: *prio, CPULatency: *cpuLat, TUN: be, NoFlows: !table})
		if err != nil {
			return err
		}
		sp := pairPath(p)
		if err := bdpBuffers(sp); err != nil {
			p.Close()
			return err
		}
		res, err := flowsFill(sp, *nFlows)
		p.Close()
		if err != nil {
			return err
		}
		name, flows := "  flow table off", "-"
		if table {
			name, flows = "  flow table on", fmt.Sprint(res.flows)
		}
		row(name, fmt.Sprintf("%.3f", res.busy), fmt.Sprintf("%.3f", res.out/bps), flows,
			fmt.Sprintf("%.0f %%", 100*res.cpu), fmt.Sprintf("%.0f", res.drops), fmt.Sprintf("%.0f", res.marks))
	}
	return nil
}

// fill is what many flows made of a link over the measured window.
type fill struct {
	busy  float64 // share of the window the link was sending
	out   float64 // IP bit/s written out
	flows int     // flows in the table's client-to-server direction
	// The direction's owner's CPU (share of a core; it also runs the
	// receiving end's TCP in its TUN writes), and its AQM's drops and CE
	// marks per second: whether the owner or the flows leave the link idle.
	cpu, drops, marks float64
}

// flowsFill runs n bulk TCP transfers client -> server at once and
// measures the hop's client-to-server direction over *tcpTime after a 2 s
// warm-up (n connections' slow starts).
func flowsFill(p path, n int) (fill, error) {
	addr := netip.AddrPortFrom(p.serverAddr, 5005).String()
	var ln net.Listener
	if err := netsys.Do(p.server, func() (err error) { ln, err = net.Listen("tcp", addr); return }); err != nil {
		return fill{}, err
	}
	defer ln.Close()
	var conns []net.Conn
	var mu sync.Mutex
	keep := func(c net.Conn) { mu.Lock(); conns = append(conns, c); mu.Unlock() }
	defer func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			keep(c)
			go func() {
				buf := make([]byte, 64<<10)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	// Dialled by 50 goroutines at once, each in the client namespace on
	// its own thread: one after another, a thousand handshakes over a
	// 20 ms path would take 20 s.
	var clients []net.Conn
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for g := 0; g < 50; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- netsys.Do(p.client, func() error {
				for i := g; i < n; i += 50 {
					c, err := net.DialTimeout("tcp", addr, 5*time.Second)
					if err != nil {
						return fmt.Errorf("flow %d of %d: %w", i+1, n, err)
					}
					keep(c)
					mu.Lock()
					clients = append(clients, c)
					mu.Unlock()
				}
				return nil
			})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return fill{}, err
		}
	}
	buf := make([]byte, 64<<10)
	for _, c := range clients {
		go func() {
			for {
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(2 * time.Second)
	s0 := p.hop.Stats().Up
	time.Sleep(*tcpTime)
	s1, tables := p.hop.StatsFlows(0)
	up := s1.Up
	dt := float64(up.Elapsed - s0.Elapsed)
	return fill{
		busy:  float64(up.Link.Busy-s0.Link.Busy) / dt,
		out:   float64(up.OutBytes-s0.OutBytes) * 8 * 1e9 / dt,
		flows: tables[hop.Up].Active,
		cpu:   float64(up.CPU-s0.CPU) / dt,
		drops: float64(up.Dropped()-s0.Dropped()) * 1e9 / dt,
		marks: float64(up.Marked-s0.Marked) * 1e9 / dt,
	}, nil
}
