package tuntest

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// notifier is an eventfd that is readable while packets may be waiting.
type notifier struct{ fd int }

func (n *notifier) open() error {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("tuntest: eventfd: %w", err)
	}
	n.fd = fd
	return nil
}

var one = []byte{1, 0, 0, 0, 0, 0, 0, 0}

func (n *notifier) signal() { unix.Write(n.fd, one) }

func (n *notifier) reset() {
	var b [8]byte
	unix.Read(n.fd, b[:])
}

// close leaves the descriptor open: a poller may still be waiting on it,
// and closing it under a poller could hand its number to another file.
// It becomes readable for good so that any poller wakes up.
func (n *notifier) close() { n.signal() }

// PollFd returns the eventfd, readable while packets may be waiting.
func (d *ChannelDevice) PollFd() int { return d.notify.fd }
