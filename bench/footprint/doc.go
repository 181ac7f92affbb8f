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
//		and GOGC=off only, one round (with -frontier: smaller workloads,
//		one run)
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
//		run's DIR/results.json (DIR/frontier.json with -frontier)
//	-frontier
//		the frontier mode, below
//	-runs n
//		with -frontier: runs of every point, interleaved (default 3; 1
//		with -quick)
//	-frontier-gogc list
//		with -frontier: the GOGC settings of the pacer's points (default
//		400,200,100,50,25,10)
//	-conditions list
//		with -frontier: some of both, 1P, quota, busy (default all)
//	-budget share
//		with -frontier: the stepper points' budget (gcstep.WithBudget),
//		in (0, 1]; 0, the default, leaves the Runtime's
//
// # The frontier
//
// With -frontier the lab measures the stepper against Go's own knob: a user
// can always turn GOGC down or set GOMEMLIMIT instead of running a
// stepper, so a memory win counts only against the best pacer point that
// costs no more. Its workloads (-workloads, default
// urandom,paced,bursty,tcp,chunk) all have a floor variant, the same work
// with no garbage:
//
//	paced     a stream paced by its producer: a goroutine writes 16 KiB
//	          chunks into a pipe and pauses 100 µs after every 64 KiB, as
//	          data arriving from a network does; the loop reads each chunk
//	          into a fresh buffer and is idle most of the time
//	chunk     bench's ChunkLoop: the same stream with no pauses and ten dups
//	          of the read end, a loop seldom idle
//
// and urandom, bursty and tcp as above. Each runs, under each condition,
// as its floor variant (no stepper, GOGC=100); without a stepper at each
// GOGC of -frontier-gogc (default 400,200,100,50,25,10) and at GOGC=off
// with GOMEMLIMIT 1.25 times the floor's peak, so that it thrashes or not;
// and with gcstep.NewRuntime(), no options, at GOGC=100, and for the
// streams also at GOGC=off. The conditions (-conditions) are both (both
// CPUs), 1P (GOMAXPROCS=1), quota (a cgroup v1 cpu controller cgroup with a
// quota of one CPU, made and removed by the lab, as root; skipped with a
// message where it cannot be made) and busy (one CPU kept busy by another
// process). Every point runs -runs times (default 3), interleaved, its
// order rotated from round to round; tables show medians.
//
// Per run it keeps peak RSS (VmHWM), RSS averaged over the run's samples,
// CPU time (user and system, the child's own), wall time, request p99
// (bursty, tcp), GC cycles, the stepper's cycles and the loop's idle
// share, and writes
//
//	DIR/frontier.json             every run and the medians
//	DIR/frontier.txt              the tables, as printed
//	DIR/frontier-WORKLOAD.{png,svg}
//	                              a panel per condition: RSS over the floor
//	                              (peak and time-averaged) against CPU, the
//	                              GOGC points joined as the frontier, the
//	                              memory-limit point and the stepper apart
//
// Two summary tables, by peak and by time-averaged RSS over the floor, set
// the stepper beside GOGC's frontier at its cost: the pacer point (without
// a stepper, at a GOGC of -frontier-gogc) with the least memory among
// those that use no more CPU than the stepper, within 10 % for the noise
// of CPU time between runs. Each names the point chosen, the ratio of the
// stepper's memory to the point's, and whether the stepper is on or below
// the frontier (ratio ≤ 1) and 25 % below it (ratio ≤ 0.75); where every
// point uses more CPU than that, it says "none cheaper" and gives no ratio.
package main
