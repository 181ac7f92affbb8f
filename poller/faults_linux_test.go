package poller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestFaultEpollCtl(t *testing.T) {
	// epoll_ctl failing (ENOMEM: the kernel is out of memory for the
	// watch; ENOSPC: max_user_watches) on Add, Modify and Remove: the
	// error comes back wrapped, the registration is as before for Add
	// and Modify and gone for Remove, and the loop keeps delivering.
	for _, errno := range []unix.Errno{unix.ENOMEM, unix.ENOSPC} {
		t.Run(errno.Error(), func(t *testing.T) {
			r, w := testPipe(t)
			l, err := NewLoop(WithBackend(BackendEpoll))
			require.NoError(t, err)
			defer l.Close()
			fail := true
			real := sys.epollCtl
			withSys(t, func(s *sysTable) {
				s.epollCtl = func(epfd, op, fd int, ev *unix.EpollEvent) error {
					if fail && fd == r {
						return errno
					}
					return real(epfd, op, fd, ev)
				}
			})
			got := 0
			h := func(fd int, _ Events) {
				var buf [8]byte
				n, _ := unix.Read(fd, buf[:])
				got += n
			}
			require.ErrorIs(t, l.Add(r, Read, h), errno)
			require.ErrorIs(t, l.Modify(r, Read), ErrNotRegistered, "a failed Add registered the fd")
			fail = false
			require.NoError(t, l.Add(r, Read, h))
			fail = true
			require.ErrorIs(t, l.Modify(r, Write), errno)
			_, err = unix.Write(w, []byte("x"))
			require.NoError(t, err)
			_, err = l.RunOnce(5 * time.Second)
			require.NoError(t, err)
			assert.Equal(t, 1, got, "the registration changed by a failed Modify")
			require.ErrorIs(t, l.Remove(r), errno)
			require.ErrorIs(t, l.Remove(r), ErrNotRegistered, "Remove keeps a registration whose epoll_ctl failed")
		})
	}
}

func TestFaultNewLoopSetup(t *testing.T) {
	// NewLoop's own system calls failing one at a time: the error names
	// the call, and whatever was made before it is closed again.
	for _, c := range []struct {
		name   string
		change func(s *sysTable)
	}{
		{"epoll_create1", func(s *sysTable) { s.epollCreate = func() (int, error) { return -1, unix.EMFILE } }},
		{"eventfd", func(s *sysTable) { s.eventfd = func() (int, error) { return -1, unix.ENFILE } }},
		{"epoll_ctl", func(s *sysTable) {
			s.epollCtl = func(int, int, int, *unix.EpollEvent) error { return unix.ENOMEM }
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := openFDs(t)
			withSys(t, c.change)
			l, err := NewLoop(WithBackend(BackendEpoll))
			require.Error(t, err)
			assert.Nil(t, l)
			assert.Contains(t, err.Error(), c.name)
			assert.Equal(t, before, openFDs(t), "fds leaked")
		})
	}
}
