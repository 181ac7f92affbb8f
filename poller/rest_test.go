package poller_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
