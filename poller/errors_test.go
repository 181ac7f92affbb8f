package poller_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/poller"
)

// checkError checks that err has the package's one form: the "poller:"
// prefix once, then the operation (and the fd, where there is one), the
// exact text want, and errors.Is still matching is.
func checkError(t *testing.T, err error, want string, is error) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, want, err.Error())
	assert.Equal(t, 1, strings.Count(err.Error(), "poller:"), "prefix not once in %q", err)
	assert.ErrorIs(t, err, is)
}

// TestErrorText: the errors of every Loop and Mux method say "poller:"
// once, then the method, then the fd.
func TestErrorText(t *testing.T) {
	h := func(int, poller.Events) {}
	fd := strconv.Itoa
	const int32Range = "outside [0, 2147483648)"
	selectRange := "outside [0, " + fd(unix.FD_SETSIZE) + ")"

	forEachBackend(t, func(t *testing.T, b poller.Backend) {
		l := newLoop(t, poller.WithBackend(b))
		p := newPipe(t)
		require.NoError(t, l.Add(p.r, poller.Read, h))
		checkError(t, l.Add(p.r, poller.Read, h),
			"poller: Add: fd "+fd(p.r)+": fd already registered", poller.ErrRegistered)
		checkError(t, l.Modify(p.w, poller.Write),
			"poller: Modify: fd "+fd(p.w)+": fd not registered", poller.ErrNotRegistered)
		checkError(t, l.Remove(p.w),
			"poller: Remove: fd "+fd(p.w)+": fd not registered", poller.ErrNotRegistered)
		loopRange := int32Range
		if b == poller.BackendSelect {
			loopRange = selectRange
		}
		checkError(t, l.Add(-1, poller.Read, h),
			"poller: Add: fd -1 "+loopRange+": fd out of range", poller.ErrFDRange)
		if b == poller.BackendSelect {
			// Loop.Add names itself, not the backend.
			checkError(t, l.Add(unix.FD_SETSIZE, poller.Read, h),
				"poller: Add: fd "+fd(unix.FD_SETSIZE)+" "+selectRange+": fd out of range", poller.ErrFDRange)
		}

		// An fd that is not open: the system call that found out.
		q := newPipe(t)
		closed := q.r
		q.close(&q.r)
		syscall := map[poller.Backend]string{poller.BackendEpoll: "epoll_ctl"}[b]
		if syscall == "" {
			syscall = "fcntl"
		}
		checkError(t, l.Add(closed, poller.Read, h),
			"poller: Add: fd "+fd(closed)+": "+syscall+": bad file descriptor", unix.EBADF)

		// AddFile and AddConn name themselves.
		f, w, err := os.Pipe()
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.NoError(t, w.Close())
		_, err = l.AddFile(f, poller.Read, h)
		require.ErrorIs(t, err, os.ErrClosed)
		assert.True(t, strings.HasPrefix(err.Error(), "poller: AddFile: "), "got %q", err)
		assert.Equal(t, 1, strings.Count(err.Error(), "poller:"), "got %q", err)
		_, err = l.AddConn(f, poller.Read, h)
		require.ErrorIs(t, err, os.ErrClosed)
		assert.True(t, strings.HasPrefix(err.Error(), "poller: AddConn: "), "got %q", err)

		require.NoError(t, l.Close())
		checkError(t, l.Close(), "poller: Close: loop closed", poller.ErrClosed)
		checkError(t, l.Add(p.w, poller.Write, h), "poller: Add: fd "+fd(p.w)+": loop closed", poller.ErrClosed)
		checkError(t, l.Modify(p.r, poller.Write), "poller: Modify: fd "+fd(p.r)+": loop closed", poller.ErrClosed)
		checkError(t, l.Remove(p.r), "poller: Remove: fd "+fd(p.r)+": loop closed", poller.ErrClosed)
		_, err = l.RunOnce(0)
		checkError(t, err, "poller: RunOnce: loop closed", poller.ErrClosed)
		checkError(t, l.Run(context.Background()), "poller: Run: loop closed", poller.ErrClosed)
	})

	t.Run("epoll/Remove-closed-fd", func(t *testing.T) {
		if !hasBackend(poller.BackendEpoll) {
			t.Skip("no epoll here")
		}
		l := newLoop(t, poller.WithBackend(poller.BackendEpoll))
		p := newPipe(t)
		n := p.r
		require.NoError(t, l.Add(n, poller.Read, h))
		p.close(&p.r)
		checkError(t, l.Remove(n), "poller: Remove: fd "+fd(n)+": epoll_ctl: bad file descriptor", unix.EBADF)
	})

	t.Run("Mux", func(t *testing.T) {
		m := poller.New()
		_, _, _, err := m.Select([]int{unix.FD_SETSIZE}, nil, nil, 0)
		checkError(t, err, "poller: Select: fd "+fd(unix.FD_SETSIZE)+" "+selectRange+": fd out of range", poller.ErrFDRange)
		_, err = m.WaitFD(-1, poller.Read, 0)
		checkError(t, err, "poller: WaitFD: fd -1 "+int32Range+": fd out of range", poller.ErrFDRange)
		_, err = poller.New(poller.WithBackend(poller.BackendSelect)).WaitFD(unix.FD_SETSIZE, poller.Read, 0)
		checkError(t, err, "poller: WaitFD: fd "+fd(unix.FD_SETSIZE)+" "+selectRange+": fd out of range", poller.ErrFDRange)

		p := newPipe(t)
		closed := p.r
		p.close(&p.r)
		_, _, _, err = m.Select([]int{closed}, nil, nil, 0)
		checkError(t, err, "poller: Select: select: bad file descriptor", unix.EBADF)
	})
}

func hasBackend(b poller.Backend) bool {
	for _, have := range poller.Backends() {
		if have == b {
			return true
		}
	}
	return false
}

// TestNewLoopSelectHighWakeFD: in a process whose low fds are all taken,
// the select backend's own wake fd is beyond FD_SETSIZE: NewLoop says so
// with an error (it used to reach FD_SET's guard), and leaks no fd.
func TestNewLoopSelectHighWakeFD(t *testing.T) {
	var dups []int
	defer func() {
		for _, fd := range dups {
			unix.Close(fd)
		}
	}()
	for {
		fd, err := unix.Dup(0)
		if err != nil {
			t.Skipf("cannot open fds up to FD_SETSIZE: %v", err)
		}
		dups = append(dups, fd)
		if fd >= unix.FD_SETSIZE+4 {
			break
		}
	}
	// Free a few fds above FD_SETSIZE only, for the loop's own.
	for _, fd := range dups[len(dups)-4:] {
		unix.Close(fd)
	}
	dups = dups[:len(dups)-4]
	before := openFDs(t)
	var l *poller.Loop
	var err error
	require.NotPanics(t, func() { l, err = poller.NewLoop(poller.WithBackend(poller.BackendSelect)) })
	if l != nil {
		l.Close()
	}
	require.ErrorIs(t, err, poller.ErrFDRange)
	assert.True(t, strings.HasPrefix(err.Error(), "poller: NewLoop: fd "), "got %q", err)
	assert.Equal(t, before, openFDs(t), "a failed NewLoop leaked an fd")
}
