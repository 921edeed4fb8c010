package tunpair

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/netsys"
)

// fakeForwarder runs until Close and records the calls Running makes.
type fakeForwarder struct {
	stop           chan struct{}
	drained, close int
	runErr         error
}

func (f *fakeForwarder) Run(ctx context.Context) error {
	select {
	case <-f.stop:
	case <-ctx.Done():
	}
	return f.runErr
}
func (f *fakeForwarder) Drain(context.Context) error {
	f.drained++
	return errors.New("2 packets left")
}
func (f *fakeForwarder) DrainBound() time.Duration { return time.Second }
func (f *fakeForwarder) Close() error {
	f.close++
	close(f.stop)
	return nil
}

// Close drains, closes the forwarder, waits for Run to end and undoes the
// journal, once however often it is called; Err then gives Run's error.
func TestRunningClose(t *testing.T) {
	f := &fakeForwarder{stop: make(chan struct{}), runErr: errors.New("device gone")}
	r := Start(context.Background(), f, netsys.NewJournal(nil), nil)
	if r.Err() != nil {
		t.Errorf("Err while running = %v, want nil", r.Err())
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close = %v, want nil (a drain that leaves packets is logged, not an error)", err)
	}
	if err := r.Close(); err != nil || f.drained != 1 || f.close != 1 {
		t.Errorf("second Close = %v after %d drains, %d closes; want nil, 1, 1", err, f.drained, f.close)
	}
	select {
	case <-r.Done():
	default:
		t.Fatal("Done open after Close")
	}
	if err := r.Err(); err == nil || err.Error() != "device gone" {
		t.Errorf("Err = %v, want Run's error", err)
	}
}
