//go:build !linux

package hop

import (
	"io"
	"time"

	"github.com/pi2hop/pi2hop/tun"
)

// The real-time driver needs Linux (ppoll, eventfd, timer slack).

func (o *owner) lockForRealTime() error    { return tun.ErrUnsupported }
func (o *owner) wait(deadline int64) error { return tun.ErrUnsupported }

type waker struct{}

func (w *waker) open() error { return tun.ErrUnsupported }
func (w *waker) signal()     {}
func (w *waker) drain()      {}
func (w *waker) close()      {}

func threadCPU(tid int32) (cpu, sys int64) { return 0, 0 }

func selfCPU() int64 { return 0 }

func pause(d int64) { time.Sleep(time.Duration(d)) }

func requestCPULatency(time.Duration) (io.Closer, error) { return nil, tun.ErrUnsupported }
