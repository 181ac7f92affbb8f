package poller_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/poller"
)

// A Lull that says no rests a Mux as a step's "no more" does: the calls of
// the next step budget neither ask again nor step, then they ask again.
func TestMuxRestsAfterLullSaysNo(t *testing.T) {
	const budget = 200 * time.Millisecond
	p := newPipe(t)
	o := &observer{}
	m := poller.New(poller.WithStepper(o), poller.WithStepBudget(budget))
	wait := func() {
		p.write(p.w, "x")
		_, _, _, err := m.Select([]int{p.r}, nil, nil, time.Second)
		require.NoError(t, err)
		drain(p.r)
	}
	start := time.Now()
	for range 5 {
		wait()
	}
	if time.Since(start) < budget {
		assert.EqualValues(t, 1, o.lulls.Load(), "Lull asked within the budget after a no")
	}
	assert.Zero(t, o.steps.Load())

	time.Sleep(budget)
	o.lull.Store(true)
	wait()
	assert.EqualValues(t, 2, o.lulls.Load(), "Lull not asked after the budget")
	assert.Positive(t, m.Stats().ZeroPolls, "no zero-timeout poll once Lull said yes")
}

// A step's "no more" rests a Mux even when the poll right after the step
// finds work: the answer is the stepper's, whatever the poll finds.
func TestMuxRestsAfterNoMoreEvenWithWorkWaiting(t *testing.T) {
	const budget = 200 * time.Millisecond
	p := newPipe(t)
	var steps atomic.Int32
	st := gcstep.Func(func(time.Duration) bool {
		steps.Add(1)
		p.write(p.w, "x") // work arrives while the step runs
		return false
	})
	m := poller.New(poller.WithStepper(st), poller.WithStepBudget(budget))
	start := time.Now()
	for range 3 {
		got, err := m.WaitFD(p.r, poller.Read, time.Second)
		require.NoError(t, err)
		require.Equal(t, poller.Read, got)
		drain(p.r)
		if steps.Load() > 1 {
			break // the second call stepped: no rest
		}
		p.write(p.w, "x") // the next calls find work at once and block on nothing
	}
	if time.Since(start) < budget {
		assert.EqualValues(t, 1, steps.Load(), "a call within the budget stepped after a no more")
	}
}
