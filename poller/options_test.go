package poller_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idlemux/idlemux/poller"
)

func TestEventsString(t *testing.T) {
	for _, c := range []struct {
		ev   poller.Events
		want string
	}{
		{0, "0"},
		{poller.Read, "Read"},
		{poller.Read | poller.Hangup, "Read|Hangup"},
		{poller.Write | poller.Error | poller.Invalid, "Write|Error|Invalid"},
		{poller.Priority | 0x100, "Priority|0x0100"},
	} {
		assert.Equal(t, c.want, c.ev.String(), "got %q, want %q", c.ev.String(), c.want)
	}
}

func TestBackendString(t *testing.T) {
	for _, c := range []struct {
		b    poller.Backend
		want string
	}{
		{poller.BackendDefault, "default"},
		{poller.BackendEpoll, "epoll"},
		{poller.BackendPoll, "poll"},
		{poller.BackendSelect, "select"},
		{poller.Backend(42), "Backend(42)"},
	} {
		assert.Equal(t, c.want, c.b.String())
	}
}

func TestOptions(t *testing.T) {
	assert.Panics(t, func() { poller.WithStepBudget(0) })

	l, err := poller.NewLoop()
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, poller.Backends()[0], l.Backend(), "the default backend comes first")
	assert.NotEqual(t, poller.BackendDefault, l.Backend())
}
