package hop

import (
	"encoding/binary"
	"io"
	"os"
	"time"
)

// requestCPULatency asks the kernel's PM QoS for CPU wake-ups within d
// (whole µs) until the returned file is closed; the kernel drops the
// request when the file is closed, also when the process dies.
func requestCPULatency(d time.Duration) (io.Closer, error) {
	f, err := os.OpenFile("/dev/cpu_dma_latency", os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	// The device takes a native-endian s32 in µs.
	if _, err := f.Write(binary.NativeEndian.AppendUint32(nil, uint32(d.Microseconds()))); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
