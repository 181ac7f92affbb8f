package gvl_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/idlemux/idlemux/gvl"
)

// An event loop holds the lock while it runs and asks, when it has nothing
// to do, whether its idle time belongs to somebody else.
func ExampleLock() {
	l := gvl.New()
	l.Acquire()
	if !l.Contended() {
		fmt.Println("idle and nobody waiting: do housekeeping")
	}
	l.Release()
	// Output: idle and nobody waiting: do housekeeping
}

// Two goroutines share the lock and take turns through Yield: the lock goes
// to the one that waited longest, and the yielder queues behind it.
func ExampleLock_Yield() {
	l := gvl.New()
	l.Acquire()
	var wg sync.WaitGroup
	wg.Go(func() {
		l.Acquire() // queues behind main
		for i := range 3 {
			fmt.Println("pong", i)
			l.Yield()
		}
		l.Release()
	})
	for l.Waiters() == 0 { // let it run until it has queued
		runtime.Gosched()
	}
	for i := range 3 {
		fmt.Println("ping", i)
		l.Yield()
	}
	l.Release()
	wg.Wait()
	// Output:
	// ping 0
	// pong 0
	// ping 1
	// pong 1
	// ping 2
	// pong 2
}

// Blocking lets other goroutines have the lock while the holder makes a
// blocking call that does not need it.
func ExampleLock_Blocking() {
	l := gvl.New()
	l.Acquire()
	l.Blocking(func() {
		// A read(2) or a sleep would go here; others may hold the lock now.
		fmt.Println("blocking without the lock")
	})
	fmt.Println("holding the lock again")
	l.Release()
	// Output:
	// blocking without the lock
	// holding the lock again
}

// AcquireContext gives up when its context is done, leaving no trace.
func ExampleLock_AcquireContext() {
	l := gvl.New()
	l.Acquire() // held elsewhere
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fmt.Println(l.AcquireContext(ctx), l.Waiters())
	l.Release()
	// Output: context canceled 0
}

// A long-running holder calls Checkpoint at safe points: it returns at once
// unless somebody has waited longer than the timeslice, and then yields.
func ExampleLock_Checkpoint() {
	l := gvl.New(gvl.WithTimeslice(gvl.DefaultTimeslice))
	l.Acquire()
	sum := 0
	for i := range 1000 {
		sum += i
		l.Checkpoint()
	}
	l.Release()
	fmt.Println(sum)
	// Output: 499500
}
