// Command urandom is the /dev/urandom demo of Ruby's "perform GC if idle"
// patch, in Go: it shows how much memory idle-time collection saves an event
// loop, and what it costs.
//
// A writer goroutine copies -len bytes from /dev/urandom into a pipe and
// closes it. -readers dups of the pipe's read end are multiplexed; each
// reader found ready reads up to -chunk bytes into a freshly allocated
// buffer, the garbage Ruby's read(16384) makes, until end of file. The
// modes read the same stream in different ways:
//
//	off         a poller.Loop over the dups, holding a gvl.Lock it releases
//	            while blocked, with no stepper: a plain event loop; it
//	            waits parked in Go's netpoller (poller.WithNetpoller(true)),
//	            as a loop consuming a stream from the same program should
//	idle        the same loop with gcstep.NewRuntime() as its stepper, no
//	            options, so the loop's idle moments are offered to the
//	            garbage collector
//	goroutines  idiomatic Go: one goroutine per dup doing blocking
//	            os.File reads through Go's own netpoller
//	floor       the off loop reading into one reused buffer: no garbage at
//	            all, the footprint no collector can beat (only on request)
//	thread      the off loop with its blocking waits on its own thread in
//	            epoll_wait instead of parked in Go's netpoller (a Loop's
//	            default; only on request)
//
// A buffer that a read leaves empty (EAGAIN: another dup of the same pipe
// took the data first) is kept for the next read, so that every mode makes
// one chunk of garbage per read that returns data, as Ruby's read does.
//
// In the goroutines mode a reader holds a mutex across its read and the
// digest update that follows, so the bytes are digested in the order they
// left the pipe; without it two readers could race between read and digest.
// The mutex makes the readers take turns, which is what ten dups of one pipe
// amount to anyway.
//
// Each run checks that nothing was lost: the SHA-256 of every byte written
// must equal the SHA-256 of every byte read, in order. A mismatch is an
// error and a non-zero exit status.
//
// Every run happens in a child process (the command runs itself again),
// because peak resident set size is a property of a process, with its own
// GOGC and GOMAXPROCS. By default the three modes run once each with every
// CPU and once each with one P (GOMAXPROCS=1: a one-CPU machine, or a
// process per core), and the off loop also runs at each GOGC setting of
// -frontier, so that the idle mode is seen beside the best GOGC: the
// lowest peak RSS among those settings that use no more CPU time than the
// idle mode, within 10 % (wall time on a shared machine is too noisy to
// judge by; it is shown beside). A user can always turn GOGC down instead of running
// a stepper; the stepper wins only where it holds less than that. Before
// the runs, a quick probe (well under a second) measures what this machine
// charges for a collection cycle with every CPU and with one P and for
// waking a sleeping thread (bench/machine measures them properly): where a
// cycle is dear, idle collection has less to win, and a table without a
// win says why. -runs N runs everything N times, interleaved (off, idle,
// goroutines, off, idle, ...), and the tables report medians.
//
// Usage:
//
//	go run ./examples/urandom [flags]
//
// The flags are:
//
//	-mode list
//		the modes to run, comma-separated: off, idle, goroutines,
//		floor, thread (default "off,idle,goroutines")
//	-len n
//		bytes to copy from /dev/urandom (default 100000000)
//	-readers n
//		dups of the read end to multiplex (default 10)
//	-chunk n
//		bytes asked for by each read, in a fresh buffer (default 16384)
//	-gogc list
//		GOGC for the runs: a percentage or "off" (default: $GOGC, else
//		100); several, comma-separated, run every mode under each in
//		turn, interleaved, with a table for each
//	-runs n
//		runs of each mode; the table shows medians (default 1)
//	-json
//		print one JSON object per run, one per line, instead of the table
//	-procs list
//		GOMAXPROCS for the runs, comma-separated; every mode runs with
//		each, and the table shows them side by side (default:
//		$GOMAXPROCS, else every CPU and 1)
//	-frontier list
//		GOGC settings at which the off loop also runs, for the best-GOGC
//		table, or "none" (default "400,200,100,50,25,10"; only when the
//		idle mode runs)
//	-probe
//		measure this machine's prices before the runs (default true;
//		-probe=false to skip)
//	-budget share
//		the idle mode's budget, gcstep.WithBudget: the share of the
//		program's CPU its stepper may spend, such as 0.1 (default 0:
//		the Runtime's own default, 3 %)
//	-busy list
//		percentages of one CPU, comma-separated, that another process
//		keeps busy during each run, to see the modes on a machine they
//		do not have to themselves (default 0). The other process is this
//		program started again, spinning for that share of every 10 ms
//		and sleeping for the rest; it is started before each run and
//		killed after it, and dies with this program. Every mode runs at
//		every level, interleaved, with one table per level
//
// The first table has one row per mode and GOMAXPROCS: mode, GOMAXPROCS,
// GOGC, peak RSS (and its ratio to the off mode's with the same
// GOMAXPROCS), wall time (and its ratio), CPU time (user and system, the
// whole process), GC cycles (all of them, the runtime's and the
// stepper's), stepper (of those, how many the idle mode's stepper ran),
// idle steps taken by the loop, bytes read, and whether the digests
// matched. The best-GOGC table that follows has, for each GOMAXPROCS,
// the off loop at each -frontier setting and the idle mode, with ratios
// to the idle mode, whether each setting costs no more CPU than the idle
// mode (within 10 %), and the best of those marked; a line per
// GOMAXPROCS says it in words.
//
// With more than one -gogc value or -busy level, a last table puts them
// side by side: a row per GOGC, GOMAXPROCS and level, with the share of
// one CPU the busy process actually took, every mode's peak RSS and wall
// time, and each mode's ratios to off at the same GOGC and level. For
// example
//
//	go run ./examples/urandom -gogc 100,400 -busy 0,50,100 -runs 5
//
// The JSON objects carry the numbers of each run under the names mode,
// gogc, gomaxprocs, peak_rss_bytes, wall_seconds, cpu_seconds, gc_cycles,
// stepper_gc_cycles, idle_steps, bytes, digest_ok, and also
// forced_gc_cycles (cycles started by runtime.GC), run, readers, chunk,
// digest, busy_percent (the -busy level) and busy_share (the share of one
// CPU the busy process actually took, less than asked when the machine is
// busier still) and, for the loop modes, loop (the poller.Stats of the
// loop) and stepper (the gcstep.Stats of the idle mode's runtime
// stepper). With -runs, the JSON has one object per run and no medians;
// the probe is left out.
//
// On a terminal, a one-line progress display (bytes, rate, current RSS) is
// kept up to date on standard error; there is none when standard error is
// not a terminal.
//
// Bad input (-len or -chunk below 1, -readers below 1 or above what the
// open-file limit allows, -runs below 1, an unknown mode or GOGC value, a
// -busy level outside 0 to 100 or given twice, a -procs value below 1, a
// -frontier setting of "off") is
// reported in one line before any work, with exit status 2.
package main
