package poller_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/gvl"
	"github.com/idlemux/idlemux/poller"
)

func ExampleMux_WaitFD() {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		panic(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])

	m := poller.New()
	ev, err := m.WaitFD(p[0], poller.Read, 10*time.Millisecond)
	fmt.Println("empty pipe:", ev, err)

	unix.Write(p[1], []byte("x"))
	ev, err = m.WaitFD(p[0], poller.Read, time.Second)
	fmt.Println("after a write:", ev, err)

	unix.Close(p[1])
	p[1] = -1
	var buf [1]byte
	unix.Read(p[0], buf[:])
	ev, err = m.WaitFD(p[0], poller.Read, time.Second)
	fmt.Println("writer gone:", ev&poller.Hangup, err)
	// Output:
	// empty pipe: 0 <nil>
	// after a write: Read <nil>
	// writer gone: Hangup <nil>
}

func ExampleMux_Select() {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		panic(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])

	m := poller.New()
	r, w, _, err := m.Select([]int{p[0]}, []int{p[1]}, nil, time.Second)
	fmt.Println(len(r), len(w), err)

	_, _, _, err = m.Select([]int{unix.FD_SETSIZE}, nil, nil, time.Second)
	fmt.Println(err)
	// Output:
	// 0 1 <nil>
	// poller: Select: fd 1024 outside [0, 1024): fd out of range
}

// The idle algorithm in one call: the lock is held and nobody waits for
// it, so WaitFD steps before polling; the stepper reports no more work, so
// the call then blocks, with the lock released, until its timeout.
func ExampleWithStepper() {
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		panic(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])

	lock := gvl.New()
	lock.Acquire()
	defer lock.Release()

	steps := 0
	m := poller.New(
		poller.WithGVL(lock),
		poller.WithStepper(gcstep.Func(func(budget time.Duration) bool {
			steps++
			return steps < 3 // work for three steps
		})),
	)
	ev, err := m.WaitFD(p[0], poller.Read, 20*time.Millisecond)
	s := m.Stats()
	fmt.Println(ev, err)
	fmt.Println("steps:", s.Steps, "zero-timeout polls:", s.ZeroPolls, "blocking polls:", s.BlockingPolls)
	// Output:
	// 0 <nil>
	// steps: 3 zero-timeout polls: 3 blocking polls: 1
}

func ExampleLoop() {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	defer r.Close()
	defer w.Close()

	l, err := poller.NewLoop()
	if err != nil {
		panic(err)
	}
	defer l.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = l.AddFile(r, poller.Read, func(fd int, ev poller.Events) {
		// Read the fd, not r: r.Read would park the loop's goroutine
		// in Go's netpoller if the pipe were empty after all.
		buf := make([]byte, 64)
		n, err := unix.Read(fd, buf)
		if err != nil {
			return // EAGAIN: nothing after all; wait for the next event
		}
		fmt.Printf("%v: %q\n", ev, buf[:n])
		if string(buf[:n]) == "bye" {
			cancel()
		}
	})
	if err != nil {
		panic(err)
	}
	l.AfterFunc(10*time.Millisecond, func() {
		fmt.Println("timer")
		w.Write([]byte("bye"))
	})
	w.Write([]byte("hello"))

	fmt.Println(l.Run(ctx))
	// Output:
	// Read: "hello"
	// timer
	// Read: "bye"
	// context canceled
}

// serve reads conn on a Loop that steps the Go collector while idle, until
// conn's peer closes it or ctx is done, handing what it reads to got. The
// README shows it as "A loop in a few lines"; TestREADMELoop keeps the two
// the same.
func serve(ctx context.Context, conn syscall.Conn, got func([]byte)) error {
	lock := gvl.New()
	lock.Acquire() // the loop's goroutine holds the lock; Run releases it only while blocked
	defer lock.Release()

	rt := gcstep.NewRuntime()
	defer rt.Close()

	loop, err := poller.NewLoop(poller.WithGVL(lock), poller.WithStepper(rt))
	if err != nil {
		return err
	}
	defer loop.Close()

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	_, err = loop.AddConn(conn, poller.Read, func(fd int, ev poller.Events) {
		// Never block in a handler: read the fd with a raw system call.
		// conn.Read would park the loop's goroutine, holding the lock,
		// whenever the data is not there after all.
		buf := make([]byte, 16<<10) // allocate as you like: idle moments collect it
		n, err := unix.Read(fd, buf)
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
			return // nothing after all: wait for the next event
		case n > 0:
			got(buf[:n])
			return
		}
		loop.Remove(fd) // end of stream, or an error: done
		stop()
	})
	if err != nil {
		return err
	}
	if err := loop.Run(ctx); !errors.Is(err, context.Canceled) {
		return err // a failed wait, or ctx's deadline
	}
	return nil // stopped, as planned
}

// A Loop serving a TCP connection, with the lock and the idle collector:
// serve is the README's loop.
func ExampleLoop_conn() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			panic(err)
		}
		c.Write([]byte("hello, loop"))
		c.Close()
	}()
	conn, err := ln.Accept()
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	var got []byte
	err = serve(context.Background(), conn.(syscall.Conn), func(b []byte) {
		got = append(got, b...)
	})
	fmt.Printf("%q %v\n", got, err)
	// Output: "hello, loop" <nil>
}

func ExampleLoop_Wake() {
	l, err := poller.NewLoop()
	if err != nil {
		panic(err)
	}
	defer l.Close()

	for range 100 {
		l.Wake() // from any goroutine; calls coalesce
	}
	n, err := l.RunOnce(-1)
	s := l.Stats()
	fmt.Println(n, err, s.WakeCalls, s.Wakeups)
	// Output: 0 <nil> 100 1
}
