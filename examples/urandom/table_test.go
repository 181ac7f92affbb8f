package main

import (
	"errors"
	"strings"
	"testing"
)

func TestWriteTable(t *testing.T) {
	c := config{length: 100_000_000, readers: 10, chunk: 16384, gogc: "100", runs: 5}
	rows := []result{
		{Mode: modeOff, GOGC: "100", GOMAXPROCS: 2, PeakRSSBytes: 8 << 20, WallSeconds: 0.5, CPUSeconds: 0.7, GCCycles: 25, Bytes: 100_000_000, DigestOK: true},
		{Mode: modeIdle, GOGC: "100", GOMAXPROCS: 2, PeakRSSBytes: 4 << 20, WallSeconds: 0.51, CPUSeconds: 0.81, GCCycles: 40, StepperCycles: 20, IdleSteps: 12345, Bytes: 100_000_000, DigestOK: true},
		{Mode: modeGoroutines, GOGC: "100", GOMAXPROCS: 2, PeakRSSBytes: 9 << 19, WallSeconds: 0.55, CPUSeconds: 0.9, GCCycles: 26, Bytes: 99_999_999, DigestOK: false},
	}
	var b strings.Builder
	if err := writeTable(&b, c, rows); err != nil {
		t.Fatal(err)
	}
	want := `100,000,000 bytes from /dev/urandom, 10 readers, 16384-byte reads, GOGC=100, median of 5 runs

  mode        GOMAXPROCS  GOGC  peak RSS  ×off    wall  ×off     CPU  GC cycles  stepper  idle steps        bytes    digest
  off                  2   100   8.0 MiB  1.00  0.50 s  1.00  0.70 s         25        -           0  100,000,000        ok
  idle                 2   100   4.0 MiB  0.50  0.51 s  1.02  0.81 s         40       20      12,345  100,000,000        ok
  goroutines           2   100   4.5 MiB  0.56  0.55 s  1.10  0.90 s         26        -           -   99,999,999  MISMATCH
`
	if got := b.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWriteTableWithoutBaseline(t *testing.T) {
	c := config{length: 10, readers: 1, chunk: 1, gogc: "off", runs: 1}
	var b strings.Builder
	if err := writeTable(&b, c, []result{{Mode: modeIdle, GOGC: "off", PeakRSSBytes: 1 << 20, WallSeconds: 1, Bytes: 10, DigestOK: true}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want 4:\n%s", len(lines), b.String())
	}
	if want := "10 bytes from /dev/urandom, 1 reader, 1-byte reads, GOGC=off"; lines[0] != want {
		t.Errorf("got heading %q, want %q", lines[0], want)
	}
	if f := strings.Fields(lines[3]); len(f) < 6 || f[5] != "-" || f[8] != "-" {
		t.Errorf("got row %q, want - for both ratios without an off row", lines[3])
	}
}

func TestFormatCount(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1,000"}, {100_000_000, "100,000,000"}, {-1234567, "-1,234,567"},
	}
	for _, tt := range tests {
		if got := formatCount(tt.in); got != tt.want {
			t.Errorf("formatCount(%d): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0 B"}, {999, "999 B"}, {1500, "1.5 kB"}, {43_100_000, "43.1 MB"}, {2_000_000_000, "2.0 GB"},
	}
	for _, tt := range tests {
		if got := formatBytes(tt.in); got != tt.want {
			t.Errorf("formatBytes(%d): got %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCheckDigests(t *testing.T) {
	ok := []result{{Mode: modeOff, Run: 1, DigestOK: true}, {Mode: modeIdle, Run: 1, DigestOK: true}}
	if err := checkDigests(ok); err != nil {
		t.Fatalf("got %v for matching digests, want nil", err)
	}
	bad := append(ok, result{Mode: modeIdle, Run: 2})
	err := checkDigests(bad)
	if !errors.Is(err, errDigest) || !strings.Contains(err.Error(), "idle run 2") {
		t.Fatalf("got %v, want errDigest naming idle run 2", err)
	}
}
