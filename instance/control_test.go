package instance

import (
	"bytes"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/internal/race"
)

// 500 concurrent stats requests are all answered, and each costs the
// instance at most 64 KB beyond the one snapshot the answering goroutine
// reuses: heap allocated and stack grown, together. Taken on each
// connection's goroutine, a snapshot of over 100 KB grew every request's
// stack and heap by several times that.
func TestControlConcurrentStatsMemory(t *testing.T) {
	base := Settings{Rate: ptr(uint64(10e6))}
	cfg, err := base.Resolve("c")
	if err != nil {
		t.Fatal(err)
	}
	in := &instance{hop: runningHop(t, cfg), settings: base}
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "control.sock"))
	if err != nil {
		t.Fatal(err)
	}
	s := serveControl(ln, in, func(net.Conn) error { return nil }, nil, nil)
	defer s.Close()

	const n, perRequest = 500, 64 << 10
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	gate := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			fail := func(msg string) {
				mu.Lock()
				failed = append(failed, msg)
				mu.Unlock()
			}
			c, err := net.DialTimeout("unix", ln.Addr().String(), 10*time.Second)
			if err != nil {
				fail(err.Error())
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second))
			io.WriteString(c, `{"op":"stats"}`+"\n")
			// The answer is read a piece at a time and dropped: the
			// clients' memory is not the instance's.
			var head [64]byte
			k, _ := io.ReadFull(c, head[:])
			rest, _ := io.Copy(io.Discard, c)
			if !bytes.HasPrefix(head[:k], []byte(`{"stats":`)) || rest < 1000 {
				fail(string(head[:k]))
			}
		}()
	}
	close(gate)
	wg.Wait()
	runtime.ReadMemStats(&b)
	if len(failed) > 0 {
		t.Fatalf("%d of %d requests failed, first: %q", len(failed), n, failed[0])
	}
	heap := int64(b.TotalAlloc - a.TotalAlloc)
	stack := max(int64(b.StackSys)-int64(a.StackSys), 0)
	t.Logf("%d requests: %d bytes allocated and %d of stack each", n, heap/n, stack/n)
	if race.Enabled {
		return // the race detector allocates on its own
	}
	if per := (heap + stack) / n; per > perRequest {
		t.Errorf("%d bytes a request (heap %d, stack %d), want at most %d", per, heap/n, stack/n, perRequest)
	}
}
