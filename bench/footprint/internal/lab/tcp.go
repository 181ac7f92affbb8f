package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/internal/rss"
	"github.com/idlemux/idlemux/poller"
)

func tcpConfig(quick bool) burstLoad {
	if quick {
		return burstLoad{conns: 16, bursts: 2, perBurst: 15, garbage: 64 << 10, gap: 350 * time.Millisecond}
	}
	return burstLoad{conns: 32, bursts: 5, perBurst: 40, garbage: 64 << 10, gap: 1200 * time.Millisecond}
}

// AfterBurstOffsets are the moments after the end of each burst at which
// the tcp workload reads its RSS: how soon the memory a burst used is
// given back. A reading falls only inside the gap; one the gap is too
// short for is not taken.
var AfterBurstOffsets = []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, time.Second}

// listenLoopback returns a non-blocking TCP socket listening on an
// ephemeral port of 127.0.0.1, and its address.
func listenLoopback() (int, string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		return -1, "", os.NewSyscallError("socket", err)
	}
	unix.CloseOnExec(fd)
	fail := func(op string, err error) (int, string, error) {
		unix.Close(fd)
		return -1, "", os.NewSyscallError(op, err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return fail("fcntl", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fail("bind", err)
	}
	if err := unix.Listen(fd, 1024); err != nil {
		return fail("listen", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return fail("getsockname", err)
	}
	in4, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		unix.Close(fd)
		return -1, "", fmt.Errorf("getsockname: unexpected address %T", sa)
	}
	return fd, fmt.Sprintf("127.0.0.1:%d", in4.Port), nil
}

// tcpServer is the tcp workload's server: every fd is a raw non-blocking
// socket read and written with system calls from the loop's handlers,
// which never block.
type tcpServer struct {
	loop     *poller.Loop
	answer   func(req []byte) ([msgSize]byte, uint32)
	conns    map[int]bool // accepted fds not yet closed
	syscalls uint64       // made by the handlers: accepts, reads, writes
	served   int64        // requests answered
	bytes    int64        // bytes allocated for them
	err      error        // the first error a handler met
}

func (s *tcpServer) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// accept takes every pending connection and registers it.
func (s *tcpServer) accept(lfd int, _ poller.Events) {
	for {
		s.syscalls++
		fd, _, err := unix.Accept(lfd)
		if err == unix.EAGAIN || err == unix.EINTR || err == unix.ECONNABORTED {
			return
		}
		if err != nil {
			s.fail(os.NewSyscallError("accept", err))
			return
		}
		unix.CloseOnExec(fd)
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			s.fail(os.NewSyscallError("fcntl", err))
			return
		}
		// Responses are small and wanted at once.
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		s.conns[fd] = true
		if err := s.loop.Add(fd, poller.Read, s.connHandler()); err != nil {
			s.close(fd)
			s.fail(err)
			return
		}
	}
}

func (s *tcpServer) close(fd int) {
	if s.conns[fd] {
		s.loop.Remove(fd)
		unix.Close(fd)
		delete(s.conns, fd)
	}
}

// connHandler returns the handler of one connection: read what is there,
// answer every complete request. The client has one request outstanding
// per connection, so a 16-byte response always fits in the socket buffer
// and a write never has to wait.
func (s *tcpServer) connHandler() poller.Handler {
	var pending []byte
	in := make([]byte, 4096)
	return func(fd int, _ poller.Events) {
		s.syscalls++
		n, err := unix.Read(fd, in)
		if err == unix.EAGAIN || err == unix.EINTR {
			return
		}
		if err != nil || n == 0 {
			if err != nil && err != unix.ECONNRESET {
				s.fail(os.NewSyscallError("read", err))
			}
			s.close(fd)
			return
		}
		pending = append(pending, in[:n]...)
		for len(pending) >= msgSize {
			out, size := s.answer(pending)
			pending = pending[msgSize:]
			s.syscalls++
			if w, err := unix.Write(fd, out[:]); err != nil || w != msgSize {
				s.fail(fmt.Errorf("write: %d of %d bytes: %v", w, msgSize, err))
				s.close(fd)
				return
			}
			s.served++
			s.bytes += int64(size)
		}
		if len(pending) == 0 {
			pending = pending[:0:0]
		}
	}
}

// runTCP serves requests over TCP loopback from the loop; a client process
// opens tens of connections and sends bursts of requests, each of which
// makes the server allocate, separated by idle gaps, and times every
// request. The server reads RSS at AfterBurstOffsets after each burst ends
// (the client says when over a pipe) and tells the sampler where the gaps
// are. Its floor variant answers without allocating.
func runTCP(st gcstep.Stepper, o runOptions) (workResult, error) {
	c, mark := tcpConfig(o.quick), o.mark
	lfd, addr, err := listenLoopback()
	if err != nil {
		return workResult{}, err
	}
	loop, release, err := newLoop(st)
	if err != nil {
		unix.Close(lfd)
		return workResult{}, err
	}
	srv := &tcpServer{loop: loop, answer: answerer(o.floor), conns: map[int]bool{}}
	defer func() {
		for fd := range srv.conns {
			unix.Close(fd)
		}
		unix.Close(lfd)
	}()
	if err := loop.Add(lfd, poller.Read, srv.accept); err != nil {
		release()
		return workResult{}, err
	}

	exe, err := os.Executable()
	if err != nil {
		release()
		return workResult{}, err
	}
	spec, _ := json.Marshal(clientSpec{Addr: addr, Conns: c.conns, Bursts: c.bursts, PerBurst: c.perBurst, Garbage: c.garbage, Gap: c.gap})
	cmd := exec.Command(exe)
	// The client's collector is the same in every run, whatever the
	// server's.
	cmd.Env = append(withoutLabEnv(os.Environ()), ClientEnv+"="+string(spec), "GOGC=100")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		release()
		return workResult{}, err
	}
	if err := cmd.Start(); err != nil {
		release()
		return workResult{}, fmt.Errorf("starting the client: %w", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu       sync.Mutex
		after    [][]uint64
		readings sync.WaitGroup
		cres     clientResult
		gotRes   bool
		lineErr  error
		done     = make(chan struct{})
	)
	go func() {
		// The client's progress, read outside the loop; its end of file
		// ends the run.
		defer close(done)
		defer cancel()
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 256<<20)
		for sc.Scan() {
			kind, arg, _ := strings.Cut(sc.Text(), " ")
			switch kind {
			case lineStart:
				mark(false)
			case lineEnd:
				mark(true)
				mu.Lock()
				b := len(after)
				after = append(after, make([]uint64, len(AfterBurstOffsets)))
				mu.Unlock()
				for j, off := range AfterBurstOffsets {
					if off > c.gap {
						continue
					}
					readings.Add(1)
					time.AfterFunc(off, func() {
						defer readings.Done()
						if v, err := rss.Current(); err == nil {
							mu.Lock()
							after[b][j] = v
							mu.Unlock()
						}
					})
				}
			case lineResult:
				if err := json.Unmarshal([]byte(arg), &cres); err != nil {
					lineErr = fmt.Errorf("client result: %w", err)
				}
				gotRes = true
			default:
				lineErr = fmt.Errorf("client: unexpected line %q", sc.Text())
			}
		}
		if err := sc.Err(); err != nil && lineErr == nil {
			lineErr = err
		}
		io.Copy(io.Discard, out)
	}()
	runErr := runLoop(ctx, loop)
	stats := loop.Stats()
	release()
	if runErr != nil {
		cmd.Process.Kill()
	}
	// Clients still waiting for a response (should the loop have stopped
	// early) see end of file instead of hanging.
	for fd := range srv.conns {
		unix.Close(fd)
		delete(srv.conns, fd)
	}
	<-done
	waitErr := cmd.Wait()
	readings.Wait()

	res := workResult{
		Bytes:           srv.bytes,
		Loop:            stats,
		LatencyKind:     "request",
		Latencies:       cres.Latencies,
		Requests:        srv.served,
		HandlerSyscalls: srv.syscalls,
		AfterBurst:      after,
	}
	want := c.conns * c.bursts * c.perBurst
	var clientErr error
	if cres.Error != "" {
		clientErr = errors.New("client: " + cres.Error)
	}
	if !gotRes && lineErr == nil {
		lineErr = errors.New("client: no result")
	}
	if waitErr != nil {
		waitErr = fmt.Errorf("client: %w", waitErr)
	}
	if err := errors.Join(runErr, srv.err, lineErr, waitErr, clientErr); err != nil {
		res.Check = err.Error()
		return res, nil
	}
	res.OK = len(res.Latencies) == want && srv.served == int64(want) && len(after) == c.bursts
	res.Check = fmt.Sprintf("%d of %d requests answered and checked by the client, %d served, %d bursts seen",
		len(res.Latencies), want, srv.served, len(after))
	return res, nil
}

// withoutLabEnv is env without the variables the lab sets per run.
func withoutLabEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k == "GOGC" || k == "GOMEMLIMIT" || k == ChildEnv || k == ClientEnv {
			continue
		}
		out = append(out, kv)
	}
	return out
}
