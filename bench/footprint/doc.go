// Footprint is idlemux's memory-footprint lab: it runs workloads built on
// the poller's event loop under several idle-stepping policies and Go
// runtime settings, each in its own child process (peak RSS is per
// process), and reports what each one cost in memory and in time.
//
// Workloads:
//
//	urandom   seed 004's demo: 100 MB from /dev/urandom through a pipe, ten
//	          dups of its read end, each ready one read into a fresh 16 KiB
//	          buffer; a SHA-256 of what was written must equal one of what
//	          was read
//	bursty    request/response over socketpairs: bursts of requests that
//	          allocate 256 KiB each, separated by idle gaps; request latency
//	          percentiles during bursts, RSS during gaps
//	tcp       request/response over TCP loopback: a client process opens 32
//	          connections and sends bursts of requests, each allocating
//	          64 KiB on the server, with 1.2 s idle gaps; the server is a
//	          poller.Loop reading and writing raw non-blocking sockets with
//	          system calls. Request percentiles (p50, p99, p99.9, nearest
//	          rank), RSS 100 ms, 300 ms and 1 s after each burst ends, and
//	          the server's CPU time and system calls per request
//	bigheap   a 64 MiB live heap with steady churn from a 1 ms loop timer,
//	          where an idle collector must not thrash; timer lateness
//	          percentiles
//
// Policies: idle stepping off, naive (runtime.GC at every idle moment, as a
// gcstep.Func) and runtime (gcstep.NewRuntime with its defaults), each
// under GOGC=50, 100, 400 and GOGC=off with a GOMEMLIMIT set per workload.
//
// For every run it records peak RSS, RSS and heap sampled over time, wall
// time, CPU time (getrusage), GC cycles, idle steps, the stepper's own
// counts (gcstep.Stats) and latency percentiles, and writes:
//
//	DIR/results.json              every run, its samples, and medians per configuration
//	DIR/rss-WORKLOAD.{png,svg}    RSS over time, a panel per GC setting, a line per policy
//	DIR/peak-vs-wall-WORKLOAD.{png,svg}
//	                              median peak RSS against median wall time per configuration
//	                              (peak-vs-cpu-bigheap: bigheap runs for a set time, so its
//	                              cost is CPU time)
//	DIR/heap-WORKLOAD-{off,runtime}.pprof
//	                              heap profiles at peak RSS, GOGC=100, summarised on stdout
//	                              as the top in-use differences by function
//
// and prints a table per workload. It exits with status 1 if any run lost
// data or failed.
//
// Usage:
//
//	go run ./bench/footprint -out DIR [flags]
//
// The flags are:
//
//	-out dir
//		where to write results (required)
//	-quick
//		a reduced run for CI, under a minute: smaller workloads, GOGC=100
//		and GOGC=off only, one round
//	-rounds n
//		rounds of every configuration, interleaved (default 3; 1 with -quick)
//	-workloads list
//		comma-separated workloads (default "urandom,bursty,tcp,bigheap")
//	-gogc list
//		comma-separated GOGC settings to run, from 50, 100, 400 and off
//		(default all of them; 100 and off with -quick)
//	-stepping list
//		comma-separated policies to run (default "off,naive,runtime")
//	-busy list
//		comma-separated percentages of one CPU (0 to 100) that another
//		process keeps busy during each run: the busy-core condition,
//		a spinning process with that duty cycle over 10 ms periods,
//		started before each run and killed after it (see
//		internal/cpuburn); each level is a condition of its own in the
//		tables, named like "GOGC=100 busy=50%" (default "0")
//	-sample d
//		RSS and heap sampling period (default 10ms)
//	-profiles
//		take the heap profiles at peak and compare them (default true;
//		with -quick, of the first workload only)
//	-replot
//		run nothing: print the tables and redraw the charts from an earlier
//		run's DIR/results.json
package main
