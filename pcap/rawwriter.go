package pcap

import (
	"time"

	"io"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// RawWriter writes a plain pcap file of raw IP packets (link type RAW)
// with ns timestamps: what a TUN hop writes, readable by every tool.
type RawWriter struct{ w *pcapgo.Writer }

// rawSnaplen is the snap length in the file header: the largest packet
// any IP header can describe, so no reader takes a packet as cut short.
const rawSnaplen = 262144

// NewRawWriter writes the file header to w.
func NewRawWriter(w io.Writer) (*RawWriter, error) {
	pw := pcapgo.NewWriterNanos(w)
	if err := pw.WriteFileHeader(rawSnaplen, layers.LinkTypeRaw); err != nil {
		return nil, err
	}
	return &RawWriter{w: pw}, nil
}

// WritePacket writes the captured bytes data of an IP packet of length
// bytes on the wire, at unixNanos.
func (r *RawWriter) WritePacket(unixNanos int64, data []byte, length int) error {
	return r.w.WritePacket(gopacket.CaptureInfo{
		Timestamp:     time.Unix(0, unixNanos),
		CaptureLength: len(data),
		Length:        length,
	}, data)
}
