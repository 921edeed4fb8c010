package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pi2hop/pi2hop/pcap/pcaptest"
)

// craftedPcap is a 100-byte pcap whose one record claims 4 GiB: captured
// and original (claimCap) or original only, with 60 bytes of an IPv4
// header after it.
func craftedPcap(t *testing.T, claimCap bool) string {
	t.Helper()
	le := binary.LittleEndian
	b := le.AppendUint32(nil, 0xa1b2c3d4)
	b = le.AppendUint16(b, 2)
	b = le.AppendUint16(b, 4)
	b = le.AppendUint64(b, 0)          // thiszone, sigfigs
	b = le.AppendUint32(b, 0xffffffff) // snaplen: the file's own claim
	b = le.AppendUint32(b, 101)        // LINKTYPE_RAW
	b = le.AppendUint64(b, 0)          // time
	capLen := uint32(60)
	if claimCap {
		capLen = 0xffffffff
	}
	b = le.AppendUint32(b, capLen)
	b = le.AppendUint32(b, 0xffffffff)
	ip := pcaptest.Packet{Src: pcaptest.Cli4, Dst: pcaptest.Srv4, Proto: 17, Payload: 32}.Build()
	b = append(b, ip...)
	if len(b) != 100 {
		t.Fatalf("crafted file is %d bytes", len(b))
	}
	path := filepath.Join(t.TempDir(), "crafted.pcap")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCraftedPcapBoundedMemory runs the built binary on pcaps whose
// records claim 4 GiB: each command fails with a message naming the
// bound, and its peak RSS (the kernel's, from wait4) stays under 100 MB.
func TestCraftedPcapBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildPi2hop(t)
	const maxRSS = 100 << 20
	for _, claimCap := range []bool{true, false} {
		file := craftedPcap(t, claimCap)
		for _, args := range [][]string{
			{"analyze", file},
			{"replay", "--pcap", file},
		} {
			var stderr bytes.Buffer
			cmd := exec.Command(bin, args...)
			cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &stderr
			err := cmd.Run()
			name := strings.Join(args[:len(args)-1], " ")
			if _, ok := err.(*exec.ExitError); !ok {
				t.Errorf("%s (captured length claimed: %v): exit %v, want a failure; stderr %q", name, claimCap, err, stderr.String())
			}
			if !strings.Contains(stderr.String(), "262144 bytes") {
				t.Errorf("%s (captured length claimed: %v): stderr %q does not name the 262144-byte bound", name, claimCap, stderr.String())
			}
			// wait4's ru_maxrss: the child's peak, or the test's own RSS if
			// larger (the child shares it until exec): an upper bound.
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			if rss := ru.Maxrss << 10; rss > maxRSS { // Linux: KiB
				t.Errorf("%s (captured length claimed: %v): peak RSS %d MB, want under %d MB", name, claimCap, rss>>20, maxRSS>>20)
			} else {
				t.Logf("%s (captured length claimed: %v): peak RSS %.1f MB, %q", name, claimCap, float64(rss)/(1<<20), strings.TrimSpace(stderr.String()))
			}
		}
	}
}
