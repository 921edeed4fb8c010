package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pi2hop/pi2hop/flow"
)

func TestFlowFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string // in the error
	}{
		{[]string{"flow"}, "no subcommand given"},
		{[]string{"flow", "nope"}, `unknown subcommand "nope"`},
		{[]string{"flow", "prague-send"}, "--to is required"},
		{[]string{"flow", "prague-send", "--to", "127.0.0.1"}, `--to "127.0.0.1": want ADDR:PORT`},
		{[]string{"flow", "prague-send", "--to", "127.0.0.1:9", "--ecn", "ect0"}, `--ecn "ect0": want l4s or classic`},
		{[]string{"flow", "prague-send", "--to", "127.0.0.1:9", "--max-rate", "10mb"}, `--max-rate "10mb": unknown unit "mb"`},
		{[]string{"flow", "prague-send", "--to", "127.0.0.1:9", "--mtu", "100"}, "must be in 150..65507"},
		{[]string{"flow", "prague-send", "--to", "127.0.0.1:9", "--duration", "-1s"}, "must not be negative"},
		{[]string{"flow", "prague-recv"}, "--listen is required"},
		{[]string{"flow", "prague-recv", "--listen", "x:y:z"}, `--listen "x:y:z"`},
		{[]string{"flow", "prague-recv", "--listen", ":0", "extra"}, `unexpected argument "extra"`},
		{[]string{"flow", "video-send", "--to", "127.0.0.1:9", "--min-rate", "2mbit", "--max-rate", "1mbit"}, "--max-rate 1mbit is below --min-rate 2mbit"},
		{[]string{"flow", "video-recv", "--listen", ":0", "--fps", "0"}, "must be in 1..240"},
		{[]string{"flow", "bulk"}, "exactly one of --listen"},
		{[]string{"flow", "bulk", "--listen", ":0", "--to", "127.0.0.1:9"}, "exactly one of --listen"},
		{[]string{"flow", "probe", "--to", "127.0.0.1:9", "--ecn", "red"}, `--ecn "red": want l4s, classic, ect0 or ce`},
		{[]string{"flow", "probe", "--to", "127.0.0.1:9", "--every", "10us"}, "must be at least 100µs"},
		{[]string{"flow", "prague-send", "--nope"}, "unknown flag: --nope"},
	}
	for _, tc := range tests {
		_, _, err := runOut(tc.args...)
		var ue *usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want a usage error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestFlowSubcommandHelp(t *testing.T) {
	for _, s := range topCommand("flow").Subs {
		out, _, err := runOut("flow", s.Name, "--help")
		if err != nil || !strings.HasPrefix(out, "Usage: pi2hop flow "+s.Name+" ") || !strings.Contains(out, "--json") {
			t.Errorf("flow %s --help: %v\n%s", s.Name, err, out)
		}
	}
	out, _, _ := runOut("help", "flow")
	for _, s := range topCommand("flow").Subs {
		if !strings.Contains(out, "  "+s.Name+" ") {
			t.Errorf("help flow does not list %s", s.Name)
		}
	}
}

// prague-recv and prague-send through Run, with --json: every line parses,
// interval lines come first and a summary ends each side's output.
func TestFlowPragueJSON(t *testing.T) {
	ln, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.LocalAddr().String()
	ln.Close() // free the port for prague-recv to take
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var recvOut string
	var recvErr error
	rctx, stopRecv := context.WithCancel(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		var b strings.Builder
		recvErr = Run(rctx, []string{"flow", "prague-recv", "--listen", addr, "--json", "--every", "200ms"}, strings.NewReader(""), &b, &b)
		recvOut = b.String()
	}()
	time.Sleep(100 * time.Millisecond)
	sendOut, _, err := runOut("flow", "prague-send", "--to", addr, "--duration", "1s", "--every", "200ms", "--json", "--label", "cli")
	time.Sleep(50 * time.Millisecond)
	stopRecv()
	wg.Wait()
	if err != nil || recvErr != nil {
		t.Fatalf("send: %v, recv: %v", err, recvErr)
	}
	for _, side := range []struct{ name, out string }{{"send", sendOut}, {"recv", recvOut}} {
		var intervals int
		var summary map[string]any
		sc := bufio.NewScanner(strings.NewReader(side.out))
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("%s: line %q: %v", side.name, sc.Text(), err)
			}
			if summary != nil {
				t.Fatalf("%s: line after the summary: %q", side.name, sc.Text())
			}
			if m["summary"] == true {
				summary = m
				continue
			}
			var iv flow.Interval
			json.Unmarshal(sc.Bytes(), &iv)
			if iv.Flow != "prague-"+side.name || iv.Dur <= 0 {
				t.Errorf("%s: interval %q", side.name, sc.Text())
			}
			intervals++
		}
		if intervals < 4 || summary == nil {
			t.Errorf("%s: %d intervals, summary %v", side.name, intervals, summary)
		}
	}
	if !strings.Contains(sendOut, `"label":"cli"`) || !strings.Contains(sendOut, `"rtt_p99_ms"`) {
		t.Errorf("sender output lacks the label or RTT percentiles:\n%s", sendOut)
	}
}

// --rfc8888 reaches both ends: a receiver with it and a sender without
// (and the reverse) end the sender with the mismatch, within 4 s, and
// matching flags carry a flow.
func TestFlowRFC8888(t *testing.T) {
	for _, tc := range []struct {
		send, recv []string
		want       string // in the sender's error; "" = no error
	}{
		{nil, []string{"--rfc8888"}, "prague-send: receiver sends type-18 block feedback: run with --rfc8888"},
		{[]string{"--rfc8888"}, nil, "prague-send: receiver sends type-17 per-packet ACKs: run without --rfc8888"},
		{[]string{"--rfc8888"}, []string{"--rfc8888"}, ""},
	} {
		ln, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.LocalAddr().String()
		ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rctx, stopRecv := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var recvErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b strings.Builder
			recvErr = Run(rctx, append([]string{"flow", "prague-recv", "--listen", addr, "--json"}, tc.recv...), strings.NewReader(""), &b, &b)
		}()
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		out, _, err := runOut(append([]string{"flow", "prague-send", "--to", addr, "--duration", "1s", "--json", "--max-rate", "5mbit"}, tc.send...)...)
		took := time.Since(start)
		stopRecv()
		wg.Wait()
		cancel()
		if recvErr != nil {
			t.Errorf("receiver %v: %v", tc.recv, recvErr)
		}
		var summary struct {
			Summary bool    `json:"summary"`
			Goodput float64 `json:"goodput_bps"`
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		json.Unmarshal([]byte(lines[len(lines)-1]), &summary)
		switch {
		case tc.want == "" && (err != nil || !summary.Summary || summary.Goodput <= 0):
			t.Errorf("send %v, recv %v: err %v, summary %+v, output:\n%s", tc.send, tc.recv, err, summary, out)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("send %v, recv %v: err %v, want %q", tc.send, tc.recv, err, tc.want)
		case took > 4*time.Second:
			t.Errorf("send %v, recv %v: took %v", tc.send, tc.recv, took)
		}
	}
}
