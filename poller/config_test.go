package poller_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/poller"
)

// panicError runs fn and returns the error it panicked with, failing the
// test if it did not panic with an error.
func panicError(t *testing.T, fn func()) (err error) {
	t.Helper()
	defer func() {
		v := recover()
		require.NotNil(t, v, "no panic")
		var ok bool
		err, ok = v.(error)
		require.True(t, ok, "panicked with %T %v, not an error", v, v)
	}()
	fn()
	return nil
}

// TestUnavailableBackend: New and NewLoop treat a backend the platform
// lacks alike: a panic with an error that names the call and the backend
// and wraps ErrBackend.
func TestUnavailableBackend(t *testing.T) {
	bad := poller.WithBackend(poller.Backend(42))
	err := panicError(t, func() { poller.New(bad) })
	assert.True(t, errors.Is(err, poller.ErrBackend), "%v does not wrap ErrBackend", err)
	assert.Equal(t, "poller: New: Backend(42): backend not available on this platform", err.Error())

	err = panicError(t, func() { poller.NewLoop(bad) })
	assert.True(t, errors.Is(err, poller.ErrBackend), "%v does not wrap ErrBackend", err)
	assert.Equal(t, "poller: NewLoop: Backend(42): backend not available on this platform", err.Error())
}

// TestNilOptions: a nil Option is ignored, by New and NewLoop alike.
func TestNilOptions(t *testing.T) {
	m := poller.New(nil, poller.WithBackend(poller.BackendSelect), nil)
	require.NotNil(t, m)
	l, err := poller.NewLoop(nil, poller.WithBackend(poller.BackendPoll), nil)
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, poller.BackendPoll, l.Backend())
}
