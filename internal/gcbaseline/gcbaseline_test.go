package gcbaseline

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestTunedGOGC(t *testing.T) {
	for _, c := range []struct {
		inuse, threshold uint64
		want             int
	}{
		{0, 100, 100},
		{10, 0, 100},
		{50, 100, 100},
		{10, 100, 500}, // 900, held at the maximum
		{80, 100, 50},  // 25, held at the minimum
		{100, 100, 50},
		{200, 100, 50},
		{40, 100, 150},
	} {
		if got := TunedGOGC(c.inuse, c.threshold); got != c.want {
			t.Errorf("TunedGOGC(%d, %d) = %d, want %d", c.inuse, c.threshold, got, c.want)
		}
	}
}

// The tuner sets GOGC at its start and after cycles, and Stop puts the
// program's back.
func TestTunerSetsAndRestores(t *testing.T) {
	old := debug.SetGCPercent(77)
	defer debug.SetGCPercent(old)
	// A threshold far above the heap: the maximum.
	tu := NewTuner(1 << 40)
	if got := debug.SetGCPercent(-1); got != MaxGOGC {
		t.Errorf("GOGC after NewTuner: %d, want %d", got, MaxGOGC)
	}
	debug.SetGCPercent(123)
	runtime.GC()
	runtime.GC() // the first's cleanup has run by the time the second is done, or soon after
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := debug.SetGCPercent(123)
		if got == MaxGOGC {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC after cycles: %d, want the tuner's %d", got, MaxGOGC)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	tu.Stop()
	tu.Stop()
	if got := debug.SetGCPercent(77); got != 77 {
		t.Errorf("GOGC after Stop: %d, want the program's 77", got)
	}
	runtime.GC()
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	if got := debug.SetGCPercent(77); got != 77 {
		t.Errorf("GOGC cycles after Stop: %d, want 77", got)
	}
}

func TestFreeOSMemoryRunsAndStops(t *testing.T) {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	stop := FreeOSMemory(time.Millisecond)
	deadline := time.Now().Add(5 * time.Second)
	for {
		metrics.Read(s)
		if s[0].Value.Uint64() >= before+2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no forced cycles from the timer")
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	stop()
	metrics.Read(s)
	after := s[0].Value.Uint64()
	time.Sleep(20 * time.Millisecond)
	metrics.Read(s)
	if s[0].Value.Uint64() != after {
		t.Errorf("forced cycles after stop: %d more", s[0].Value.Uint64()-after)
	}
}

func TestBadArguments(t *testing.T) {
	for name, f := range map[string]func(){
		"NewTuner(0)":     func() { NewTuner(0) },
		"FreeOSMemory(0)": func() { FreeOSMemory(0) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s did not panic", name)
				}
			}()
			f()
		}()
	}
}

func TestStart(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)
	for _, name := range []string{"none", "tuner", "freeos"} {
		if !Valid(name) {
			t.Errorf("Valid(%q) = false", name)
		}
		stop, err := Start(name)
		if err != nil {
			t.Fatalf("Start(%q): %v", name, err)
		}
		stop()
		if got := debug.SetGCPercent(100); got != 100 {
			t.Errorf("GOGC after %s stopped: %d", name, got)
		}
	}
	if _, err := Start("gctuner"); err == nil || Valid("gctuner") {
		t.Error("Start(\"gctuner\") accepted")
	}
}
