// Package bench holds idlemux's benchmarks: Ruby's thread benchmark family
// (vm_thread_pass, vm_thread_mutex1-3, vm_thread_create_join,
// vm_thread_alive_check1, vm_thread_queue, vm_thread_condvar1,
// vm_thread_pipe) ported to goroutines coordinated by a gvl.Lock, the two
// stack-depth experiments of the Ruby 1.8 thread patch, and one-shot select
// and pipe ping-pongs through the poller that count their system calls.
//
// The package has no API; it is all in its tests. Every benchmark is a
// family of sub-benchmarks whose names carry key=value configuration, so that
// benchstat and the compare command can line them up:
//
//	impl=gvl       the idlemux version: goroutines taking turns on a gvl.Lock
//	impl=mutex     the plain-Go baseline a Go programmer would write instead:
//	impl=chan        a sync.Mutex, channels, a sync.Cond, or blocking
//	impl=cond        os.File reads served by Go's own netpoller
//	impl=os
//	step=off|on    idle stepping (gcstep.NewRuntime) through the poller off or on
//	depth=N        stack depth of the goroutine that does the work
//	goroutines=N   how many goroutines contend
//
// Run them with
//
//	go test -run '^$' -bench . ./bench
//
// and compare the configurations side by side with
//
//	go run ./bench/compare
//
// The memory-footprint lab is the command in bench/footprint.
package bench
