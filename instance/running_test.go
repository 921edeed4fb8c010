package instance

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRunningIn: an instance runs when its state file names a live
// process and its control socket is there; a dead process's state file
// (a leftover) or a state file without a socket is not running.
func TestRunningIn(t *testing.T) {
	dir := t.TempDir()
	start, err := ProcStart(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err) // not Linux
	}
	write := func(name string, st State, sock bool) {
		b, _ := json.Marshal(st)
		if err := os.WriteFile(filepath.Join(dir, name+".json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if sock {
			l, err := net.Listen("unix", filepath.Join(dir, name+".sock"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
		}
	}
	write("live", State{PID: os.Getpid(), Start: start}, true)
	write("also", State{PID: os.Getpid(), Start: start}, true)
	write("dead", State{PID: os.Getpid(), Start: start + 1}, true) // the PID reused since
	write("nosock", State{PID: os.Getpid(), Start: start}, false)
	got, err := runningIn(dir)
	if want := []string{"also", "live"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("runningIn = %v, %v; want %v", got, err, want)
	}
}

func TestPick(t *testing.T) {
	tests := []struct {
		name    string
		given   bool
		running []string
		want    string // the name picked, or a part of the error
		wantErr bool
	}{
		{"pi2hop", false, []string{"foo"}, "foo", false},
		{"pi2hop", false, []string{"foo", "pi2hop"}, "pi2hop", false},
		{"pi2hop", false, []string{"bar", "foo"}, "2 instances run: bar, foo; give --name", true},
		{"pi2hop", false, nil, `no running instance "pi2hop", and none other`, true},
		{"pi2hop", true, []string{"bar", "foo"}, `no running instance "pi2hop"; running: bar, foo`, true},
		{"foo", true, []string{"bar", "foo"}, "foo", false},
		{"foo", true, []string{"foo"}, "foo", false},
	}
	for _, tt := range tests {
		got, err := pick(tt.name, tt.given, tt.running)
		switch {
		case tt.wantErr && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("pick(%q, %v, %v) = %q, %v; want an error with %q", tt.name, tt.given, tt.running, got, err, tt.want)
		case !tt.wantErr && (err != nil || got != tt.want):
			t.Errorf("pick(%q, %v, %v) = %q, %v; want %q", tt.name, tt.given, tt.running, got, err, tt.want)
		}
	}
}
