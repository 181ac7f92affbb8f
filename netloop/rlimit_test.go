package netloop_test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/netloop"
)

// emfileEnv tells a re-executed test binary to run TestEMFILEChild.
const emfileEnv = "NETLOOP_EMFILE_CHILD"

// TestEMFILE runs TestEMFILEChild in a child process (this test binary
// again) that lowers its own RLIMIT_NOFILE, so that this process keeps its
// fds.
func TestEMFILE(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestEMFILEChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), emfileEnv+"=1")
	out, err := cmd.CombinedOutput()
	assert.NotContains(t, string(out), "panic:")
	require.NoError(t, err, "child:\n%s", out)
	require.Contains(t, string(out), "--- PASS: TestEMFILEChild", "child:\n%s", out)
	t.Logf("child:\n%s", out)
}

// TestEMFILEChild: with no fd left, accept fails with EMFILE; the loop
// backs off instead of spinning on the connections waiting in the
// backlog, reports the error, and accepts them once fds are free again.
func TestEMFILEChild(t *testing.T) {
	if os.Getenv(emfileEnv) == "" {
		t.Skip("run by TestEMFILE in a child process")
	}
	lim := unix.Rlimit{Cur: 64, Max: 64}
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim))

	var mu sync.Mutex
	var acceptErrs []string
	srv, addr := serve(t, newLines(nil), netloop.WithLoops(1), netloop.WithAcceptErrorFunc(func(err error) {
		mu.Lock()
		acceptErrs = append(acceptErrs, err.Error())
		mu.Unlock()
	}))
	// A first connection sets up Go's own poller (its fds) for the
	// clients, while fds are free.
	first := dial(t, "tcp", addr)
	first.Write([]byte("hi\n"))
	assert.Equal(t, "HI\n", readLine(t, bufio.NewReader(first)))

	// The clients' sockets are made while fds are free, and connected
	// once none is: the server then has none to accept them with.
	port := srv.Addr().(*net.TCPAddr).Port
	clients := make([]int, 3)
	for i := range clients {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		require.NoError(t, err)
		defer unix.Close(fd)
		tv := unix.NsecToTimeval(timeout.Nanoseconds())
		require.NoError(t, unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
		clients[i] = fd
	}
	var held []int
	for {
		fd, err := unix.Dup(0)
		if err != nil {
			require.ErrorIs(t, err, unix.EMFILE)
			break
		}
		held = append(held, fd)
	}
	for _, fd := range clients {
		require.NoError(t, unix.Connect(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}, Port: port}))
		_, err := unix.Write(fd, []byte("ping\n"))
		require.NoError(t, err)
	}
	eventually(t, func() bool { return srv.Stats().AcceptErrors > 0 }, "accept never failed")
	before := srv.Stats()
	time.Sleep(300 * time.Millisecond)
	after := srv.Stats()
	// With the back-off (5 ms doubling) about six retries fit in 300 ms;
	// a spinning loop makes thousands.
	assert.Less(t, after.AcceptErrors-before.AcceptErrors, uint64(20), "accept retried too often")
	assert.Less(t, after.Loops[0].Syscalls-before.Loops[0].Syscalls, uint64(100), "the loop spins")
	assert.Zero(t, after.Accepted-before.Accepted)

	for _, fd := range held {
		unix.Close(fd)
	}
	for _, fd := range clients {
		buf := make([]byte, 16)
		n, err := unix.Read(fd, buf)
		require.NoError(t, err)
		assert.Equal(t, "PING\n", string(buf[:n]))
	}
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, acceptErrs)
	assert.True(t, strings.Contains(acceptErrs[0], "too many open files"), "%q", acceptErrs[0])
	t.Logf("%d accept errors, the first: %s", len(acceptErrs), acceptErrs[0])
}
