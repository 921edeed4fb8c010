package tuntest

import (
	"testing"

	"github.com/pi2hop/pi2hop/tun"
	"golang.org/x/sys/unix"
)

var _ tun.Pollable = (*ChannelDevice)(nil)

func readable(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, _ := unix.Poll(fds, 0)
	return n == 1
}

func TestPollFdFollowsPackets(t *testing.T) {
	d, err := NewChannelDevice("test0", 1500, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if readable(d.PollFd()) {
		t.Fatal("readable before any packet")
	}
	d.Inject([]byte{1})
	d.Inject([]byte{2})
	if !readable(d.PollFd()) {
		t.Fatal("not readable with packets waiting")
	}
	bufs := [][]byte{make([]byte, 4)}
	sizes := []int{0}
	d.TryRead(bufs, sizes)
	if !readable(d.PollFd()) {
		t.Fatal("not readable with one packet left after a full batch")
	}
	d.TryRead(bufs, sizes)
	d.TryRead(bufs, sizes)
	if readable(d.PollFd()) {
		t.Fatal("readable after draining")
	}
}
