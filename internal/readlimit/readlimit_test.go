package readlimit

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	os.WriteFile(small, []byte("12345"), 0o600)
	sparse := filepath.Join(dir, "sparse")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(1 << 30)
	f.Close()
	for _, tt := range []struct {
		path    string
		max     int64
		want    string
		wantErr string
	}{
		{small, 5, "12345", ""},
		{small, 4, "", small + ": larger than 4 bytes, the limit for this file"},
		{"/dev/zero", 1 << 20, "", "/dev/zero: larger than 1048576 bytes, the limit for this file"},
		{sparse, 1 << 20, "", sparse + ": larger than 1048576 bytes, the limit for this file"},
	} {
		b, err := ReadFile(tt.path, tt.max)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ReadFile(%s, %d): %v, want %q", tt.path, tt.max, err, tt.wantErr)
			}
			continue
		}
		if err != nil || string(b) != tt.want {
			t.Errorf("ReadFile(%s, %d) = %q, %v; want %q", tt.path, tt.max, b, err, tt.want)
		}
	}
}
