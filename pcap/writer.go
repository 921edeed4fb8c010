package pcap

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/pi2hop/pi2hop/invoker"
)

// flushIdle is how long written packets may sit in the buffer while no new
// ones arrive, so a live file is readable soon after traffic stops.
const flushIdle = 200 * time.Millisecond

// run is the writer goroutine: it drains the ring into the file, sleeps
// when the ring is empty, and finishes the file after Close.
func (c *Capture) run() {
	defer close(c.done)
	idle := time.NewTimer(flushIdle)
	idle.Stop()
	for {
		n := c.drain()
		if c.closing.Load() {
			// No new claims are possible now; wait for the producers
			// that claimed a record to publish it, then write it.
			for c.ring.claimed() {
				if rec, ok := c.ring.peek(); ok {
					c.write(rec)
					c.ring.release(rec)
				} else {
					runtime.Gosched()
				}
			}
			if err := c.w.finish(); err != nil && c.err == nil {
				c.err = err
			}
			return
		}
		if n > 0 {
			continue
		}
		// Announce the sleep, then look once more: a producer that
		// published before seeing the flag is caught by this peek.
		c.sleeping.Store(true)
		if _, ok := c.ring.peek(); ok || c.closing.Load() {
			c.sleeping.Store(false)
			continue
		}
		if c.w.dirty {
			idle.Reset(flushIdle)
			select {
			case <-c.wake:
				idle.Stop()
			case <-idle.C:
				c.w.flush()
			}
		} else {
			<-c.wake
		}
		c.sleeping.Store(false)
	}
}

// drain writes every published record and returns how many.
func (c *Capture) drain() int {
	n := 0
	for {
		rec, ok := c.ring.peek()
		if !ok {
			return n
		}
		c.write(rec)
		c.ring.release(rec)
		n++
	}
}

// write writes one record, or counts it as a capture drop once the file
// has failed.
func (c *Capture) write(rec *record) {
	if err := c.w.packet(rec); err != nil {
		if c.err == nil {
			c.err = err
		}
		c.dropped[rec.iface].Add(1)
		return
	}
	c.written[rec.iface].Add(1)
}

// countingWriter counts the bytes that reach the file.
type countingWriter struct {
	w io.Writer
	n int64
}

func (cw *countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	cw.n += int64(n)
	return n, err
}

// fileWriter is the writer goroutine's state: the current file, its
// pcapng writer, and what has been written to it.
type fileWriter struct {
	c        *Capture
	f        *os.File
	cw       countingWriter
	bw       *bufio.Writer
	ng       *pcapgo.NgWriter // nil until the file's headers are written
	ifaces   int              // interfaces described in the current file
	headEnd  int64            // size of the current file after its headers
	index    int              // 0 for FILE, i for FILE.i
	files    atomic.Int32     // files created, for Capture.Files
	dirty    bool             // bytes buffered but not flushed
	failed   error
	comment  []byte
	comments [1]string
}

func newFileWriter(c *Capture, f *os.File) *fileWriter {
	w := &fileWriter{c: c, f: f, comment: make([]byte, 0, 160)}
	w.cw.w = f
	// 1 MiB: NgWriter reuses a bufio.Writer this large instead of adding
	// its own 4 KiB one, so each packet costs a copy, not a syscall.
	w.bw = bufio.NewWriterSize(&w.cw, 1<<20)
	w.files.Store(1)
	return w
}

// size is the current file's length including buffered bytes.
func (w *fileWriter) size() int64 { return w.cw.n + int64(w.bw.Buffered()) }

// start writes the section header and every interface known so far.
func (w *fileWriter) start() error {
	c := w.c
	c.ifMu.Lock()
	names := append([]string(nil), c.ifName...)
	c.ifMu.Unlock()
	first := "pi2hop" // a file must describe an interface; only without taps
	if len(names) > 0 {
		first = names[0]
	}
	ng, err := pcapgo.NewNgWriterInterface(w.bw, w.iface(first), pcapgo.NgWriterOptions{
		SectionInfo: pcapgo.NgSectionInfo{
			Hardware:    runtime.GOARCH,
			OS:          runtime.GOOS,
			Application: c.opt.Application,
			Comment:     c.opt.Comment,
		},
	})
	if err != nil {
		return err
	}
	w.ng = ng
	w.ifaces = 1
	if err := w.addInterfaces(names); err != nil {
		return err
	}
	w.headEnd = w.size()
	w.dirty = true
	return nil
}

func (w *fileWriter) iface(name string) pcapgo.NgInterface {
	return pcapgo.NgInterface{
		Name:                name,
		OS:                  runtime.GOOS,
		LinkType:            layers.LinkTypeRaw,
		SnapLength:          uint32(w.c.opt.Snaplen),
		TimestampResolution: 9,
	}
}

// addInterfaces describes names[w.ifaces:] in the current file.
func (w *fileWriter) addInterfaces(names []string) error {
	for ; w.ifaces < len(names); w.ifaces++ {
		if _, err := w.ng.AddInterface(w.iface(names[w.ifaces])); err != nil {
			return err
		}
	}
	return nil
}

// epbSize is the length of an enhanced packet block, as pcapgo writes it.
func epbSize(capLen, commentLen int) int64 {
	n := 32 + pad4(capLen)
	if commentLen > 0 {
		n += 4 + pad4(commentLen) + 4 // the option, then opt_endofopt
	}
	return int64(n)
}

func pad4(n int) int { return (n + 3) &^ 3 }

// isbSize is the length of one interface statistics block as written by
// finishFile: header, four 8-byte options, end of options, trailer.
const isbSize = 24 + 4*(4+8) + 4

func (w *fileWriter) packet(rec *record) error {
	if w.failed != nil {
		return w.failed
	}
	if w.ng == nil {
		if err := w.fail(w.start()); err != nil {
			return err
		}
	}
	if int(rec.iface) >= w.ifaces {
		w.c.ifMu.Lock()
		names := w.c.ifName
		w.c.ifMu.Unlock()
		if err := w.fail(w.addInterfaces(names)); err != nil {
			return err
		}
	}
	var opts pcapgo.NgPacketOptions
	if rec.hasAnn {
		w.comment = AppendComment(w.comment[:0], &rec.ann)
		w.comments[0] = string(w.comment)
		opts.Comments = w.comments[:]
	}
	if max := w.c.opt.MaxSize; max > 0 {
		size := w.size()
		need := epbSize(int(rec.capLen), len(w.comment)*boolInt(rec.hasAnn)) + int64(w.ifaces)*isbSize
		if size > w.headEnd && size+need > max {
			if err := w.fail(w.rotate()); err != nil {
				return err
			}
		}
	}
	ci := gopacket.CaptureInfo{
		Timestamp:      time.Unix(0, rec.at),
		CaptureLength:  int(rec.capLen),
		Length:         int(rec.origLen),
		InterfaceIndex: int(rec.iface),
	}
	w.dirty = true
	return w.fail(w.ng.WritePacketWithOptions(ci, rec.data[:rec.capLen], opts))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fail records the first error; later packets are counted as dropped.
func (w *fileWriter) fail(err error) error {
	if err != nil && w.failed == nil {
		w.failed = fmt.Errorf("capture %s: %w", rotatedName(w.c.path, w.index), err)
	}
	return w.failed
}

func (w *fileWriter) flush() {
	if w.failed == nil {
		w.fail(w.bw.Flush())
	}
	w.dirty = false
}

// rotate completes the current file and starts FILE.<index+1>.
func (w *fileWriter) rotate() error {
	if err := w.finishFile(); err != nil {
		return err
	}
	w.index++
	f, err := w.c.opt.Owner.Create(rotatedName(w.c.path, w.index), invoker.ModeCapture)
	if err != nil {
		return err
	}
	w.files.Add(1)
	w.f = f
	w.cw = countingWriter{w: f}
	w.bw.Reset(&w.cw)
	w.ng = nil
	w.ifaces = 0
	return w.start()
}

// finishFile writes each interface's statistics (cumulative since the
// capture began, as pcapng defines them), flushes and closes the file.
func (w *fileWriter) finishFile() error {
	if w.ng == nil {
		if err := w.start(); err != nil {
			return err
		}
	}
	now := time.Now()
	for i := range w.ifaces {
		if i >= MaxInterfaces {
			break
		}
		dropped := w.c.dropped[i].Load()
		err := w.ng.WriteInterfaceStats(i, pcapgo.NgInterfaceStatistics{
			LastUpdate:      now,
			StartTime:       w.c.start,
			EndTime:         now,
			PacketsReceived: w.c.written[i].Load() + dropped,
			PacketsDropped:  dropped,
		})
		if err != nil {
			return err
		}
	}
	if err := w.bw.Flush(); err != nil {
		return err
	}
	w.dirty = false
	return w.f.Close()
}

// finish completes the last file at Close.
func (w *fileWriter) finish() error {
	if w.failed != nil {
		w.f.Close()
		return w.failed
	}
	return w.fail(w.finishFile())
}
