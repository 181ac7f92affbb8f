package gvl_test

import (
	"sync"
	"testing"

	"github.com/idlemux/idlemux/gvl"
)

func TestMutualExclusion(t *testing.T) {
	const goroutines, rounds = 16, 2000
	for _, tc := range []struct {
		name string
		lock func() *gvl.Lock
	}{
		{"zero", func() *gvl.Lock { return new(gvl.Lock) }},
		{"new", func() *gvl.Lock { return gvl.New() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.lock()
			var inside, counter int // guarded by l
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range rounds {
						switch (g + i) % 4 {
						case 0:
							l.Acquire()
						case 1:
							if !l.TryAcquire() {
								l.Acquire()
							}
						case 2:
							l.Acquire()
							l.Yield()
						case 3:
							l.Acquire()
							l.Blocking(func() {})
						}
						inside++
						if inside != 1 {
							t.Errorf("%d goroutines inside the lock, want 1", inside)
						}
						counter++
						inside--
						l.Release()
					}
				})
			}
			wg.Wait()
			if counter != goroutines*rounds {
				t.Errorf("counter = %d, want %d", counter, goroutines*rounds)
			}
			if l.Contended() || l.Waiters() != 0 {
				t.Errorf("Contended() = %v, Waiters() = %d after all returned, want false, 0", l.Contended(), l.Waiters())
			}
			if !l.TryAcquire() {
				t.Error("lock left held")
			}
		})
	}
}
