package flow

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestReporterLines(t *testing.T) {
	tests := []struct {
		name  string
		json  bool
		label string
		write func(r *Reporter)
		want  string
	}{
		{"bulk text", false, "", func(r *Reporter) {
			r.BulkSummary(BulkSummary{Bytes: 1_000_000, Duration: 1500 * time.Millisecond, GoodputBps: 16e6 / 3})
		}, "[bulk] summary: bytes=1000000 duration_s=1.5 goodput_bps=5.333e+06\n"},
		{"bulk JSON with label", true, "x", func(r *Reporter) {
			r.BulkSummary(BulkSummary{Bytes: 10, Duration: time.Second, GoodputBps: 80})
		}, `{"bytes":10,"duration_s":1,"flow":"bulk","goodput_bps":80,"label":"x","summary":true}` + "\n"},
		{"probe interval text", false, "", func(r *Reporter) {
			r.Interval(Interval{Flow: "probe", T: 2, RTTSamples: 3, RTTMeanMs: 1.5, RTTP99Ms: 2, RTTMaxMs: 2.25, CEFrac: 0.5})
		}, "[probe]    2.00 s  RTT 1.50 ms (p99 2.00, max 2.25)  CE 50.00%  loss 0.00%\n"},
		{"bulk interval text", false, "", func(r *Reporter) {
			r.Interval(Interval{Flow: "bulk", Label: "b1", T: 1, GoodputBps: 9.5e6})
		}, "[bulk]    1.00 s b1  goodput   9.500 Mbit/s\n"},
		{"sender summary text: validation failed, RTT rose", false, "", func(r *Reporter) {
			r.SenderSummary("prague-send", SenderSummary{Duration: 2 * time.Second, ECN: "Not-ECT", FellBack: true,
				Validation: ECNValidation{State: "failed", Failed: "bleached", At: 1250 * time.Millisecond, RTTRiseNoCE: 12300 * time.Microsecond}})
		}, "[prague-send] summary: duration_s=2 packets_sent=0 goodput_bps=0 rtt_samples=0 rtt_p50_ms=0 rtt_p95_ms=0 rtt_p99_ms=0 rtt_max_ms=0" +
			" ce_frac=0 loss_frac=0 ecn=Not-ECT fell_back=true timeouts=0 ecn_validation=failed ecn_fail_reason=bleached ecn_fail_t_s=1.25 rtt_rise_no_ce_ms=12.3\n" +
			"[prague-send] ECN validation failed at 1.25 s (bleached): sending Not-ECT with a loss-only response\n" +
			"[prague-send] no congestion signal while RTT rose by 12.3 ms\n"},
		{"sender summary JSON: capable, RTT rose under 5 ms", true, "", func(r *Reporter) {
			r.SenderSummary("prague-send", SenderSummary{ECN: "ECT(1)", Validation: ECNValidation{State: "capable", RTTRiseNoCE: 4900 * time.Microsecond}})
		}, `{"ce_frac":0,"duration_s":0,"ecn":"ECT(1)","ecn_validation":"capable","fell_back":false,"flow":"prague-send","goodput_bps":0,` +
			`"loss_frac":0,"packets_sent":0,"rtt_max_ms":0,"rtt_p50_ms":0,"rtt_p95_ms":0,"rtt_p99_ms":0,"rtt_rise_no_ce_ms":4.9,"rtt_samples":0,"summary":true,"timeouts":0}` + "\n"},
		{"sender interval text: validation failed", false, "", func(r *Reporter) {
			r.Interval(Interval{Flow: "prague-send", T: 1, ECNFallback: "mangled", ErrorL4S: true})
		}, "[prague-send]    1.00 s  goodput   0.000 Mbit/s  CE 0.00%  loss 0.00%  error_L4S  ECN validation failed: mangled\n"},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		tc.write(NewReporter(&b, tc.json, tc.label))
		if b.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, b.String(), tc.want)
		}
	}
}

func TestSocketInputErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"no --to", dialErr(DialUDP("", "")), "to is required: the receiver's ADDR:PORT"},
		{"no port", dialErr(DialUDP("127.0.0.1", "")), `to "127.0.0.1": want ADDR:PORT with a port, like 10.0.0.2:8080 or [::1]:8080`},
		{"bind family", dialErr(DialUDP("127.0.0.1:9", "[::1]:0")), `bind "[::1]:0": want ADDR:PORT of the udp4 family`},
		{"no --listen", second(ListenUDP("")), "listen is required: the local ADDR:PORT, like :8080"},
		{"bad --listen", second(ListenUDP("x:y:z")), `listen "x:y:z": want ADDR:PORT, like :8080 or [::]:8080`},
		{"ecn", CheckECN("ect0"), `ecn "ect0": want l4s or classic`},
		{"probe ecn", second(ParseProbeECN("red")), `ecn "red": want l4s, classic, ect0 or ce`},
	}
	for _, tc := range tests {
		var ie *InputError
		if !errors.As(tc.err, &ie) || tc.err.Error() != tc.want {
			t.Errorf("%s: %v, want an InputError %q", tc.name, tc.err, tc.want)
		}
	}
}

// second returns the error of a two- or three-value call.
func second[T any](v T, err error) error { return err }

func dialErr[C, P any](_ C, _ P, err error) error { return err }
