package gvl_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/gvl"
)

// TestNilOption: a nil Option is ignored, as in every package of the
// module; the others still apply.
func TestNilOption(t *testing.T) {
	var events []gvl.Event
	var l *gvl.Lock
	require.NotPanics(t, func() {
		l = gvl.New(nil, gvl.WithHook(func(e gvl.Event) { events = append(events, e) }), nil)
	})
	l.Acquire()
	l.Release()
	assert.NotEmpty(t, events, "the hook given beside nil Options was not installed")

	l = gvl.New(nil, gvl.WithTimeslice(time.Millisecond))
	assert.True(t, l.TryAcquire())
	l.Release()
}
