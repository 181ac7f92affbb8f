package poller_test

import (
	"testing"

	"github.com/idlemux/idlemux/poller"
)

// A readyCase sets up an fd that is ready for something and says what a
// wait asking for ask must report at least.
type readyCase struct {
	name  string
	setup func(t *testing.T) (fd int, ask poller.Events)
	want  poller.Events
	// wantSelect replaces want for the select backend, which reports
	// hangups as readable and has no error condition.
	wantSelect poller.Events
}

func (c readyCase) expect(b poller.Backend) poller.Events {
	if b == poller.BackendSelect && c.wantSelect != 0 {
		return c.wantSelect
	}
	return c.want
}

var readyCases = []readyCase{
	{
		name: "pipe/read",
		setup: func(t *testing.T) (int, poller.Events) {
			p := newPipe(t)
			p.write(p.w, "x")
			return p.r, poller.Read
		},
		want: poller.Read,
	},
	{
		name: "pipe/write",
		setup: func(t *testing.T) (int, poller.Events) {
			p := newPipe(t)
			return p.w, poller.Write
		},
		want: poller.Write,
	},
	{
		name: "pipe/hangup",
		setup: func(t *testing.T) (int, poller.Events) {
			p := newPipe(t)
			p.close(&p.w)
			return p.r, poller.Read
		},
		want:       poller.Hangup,
		wantSelect: poller.Read,
	},
	{
		name: "pipe/reader-gone",
		setup: func(t *testing.T) (int, poller.Events) {
			p := newPipe(t)
			p.close(&p.r)
			return p.w, poller.Write
		},
		want:       poller.Error,
		wantSelect: poller.Write,
	},
	{
		name: "socketpair/read",
		setup: func(t *testing.T) (int, poller.Events) {
			s := newSocketpair(t)
			s.write(s.w, "hello")
			return s.r, poller.Read | poller.Write
		},
		want: poller.Read | poller.Write,
	},
	{
		name: "socketpair/write",
		setup: func(t *testing.T) (int, poller.Events) {
			s := newSocketpair(t)
			return s.r, poller.Write
		},
		want: poller.Write,
	},
	{
		name: "socketpair/hangup",
		setup: func(t *testing.T) (int, poller.Events) {
			s := newSocketpair(t)
			s.close(&s.w)
			return s.r, poller.Read
		},
		want:       poller.Read | poller.Hangup,
		wantSelect: poller.Read,
	},
}
