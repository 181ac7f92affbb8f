// Servers compares the same RESP key-value server (the command code of
// examples/kv/resp) on five network stacks, each in its own child process
// so that peak RSS is per server:
//
//	netloop-step    idlemux's netloop, idle stepping on, its default loops
//	                (one per four Ps, at least one)
//	netloop-step-1, netloop-step-2
//	                the same with one loop, with two
//	netloop         idlemux's netloop, idle stepping off
//	netloop-1, netloop-2
//	                the same with one loop, with two
//	netloop-reuseport  netloop without a stepper, a listening socket per
//	                loop (SO_REUSEPORT) instead of one acceptor (not in the
//	                default -servers; for -pipe-servers)
//	netloop-thread  netloop without a stepper, its loops blocking in
//	                epoll_wait on their threads (poller.WithNetpoller(false),
//	                netloop's default since the parked wait cost servers
//	                p99 and CPU; the same as netloop now, kept for older
//	                result files; not in the default -servers)
//	netloop-parked, netloop-parked-1
//	                netloop without a stepper, its loops parked in Go's
//	                netpoller (WithLoopOptions(poller.WithNetpoller(true));
//	                not in the default -servers)
//	gnet            github.com/panjf2000/gnet/v2, multicore (a loop per CPU)
//	gnet-1          the same with one loop
//	nbio            github.com/lesismal/nbio, its default pollers (one per
//	                four CPUs, at least one)
//	net             net.Listener and a goroutine per connection
//
// This directory is its own Go module, so that gnet and nbio never enter the
// library's module graph. The driver builds the servers (srv/...) with the
// go command, starts each one, and runs the experiments chosen with -run:
//
//	bursty    -bursts runs of SET/GET load (-n requests per test, -c
//	          connections, -d byte values, -r keys), -gap of silence between
//	          them, then -tail of silence; per server: requests/s, p50/p99,
//	          peak RSS (the higher of VmHWM and the samples), RSS at the
//	          end of each gap and -tail after the load (VmRSS sampled
//	          every -sample), CPU (utime+stime) and
//	          GC cycles (printed by the server as it exits); -values copy
//	          makes the store copy every SET into new memory (garbage),
//	          -values reuse (the default) lets it overwrite in place
//	idle      -idle-conns connections, each served one PING and then left
//	          idle: RSS per connection (the soft RLIMIT_NOFILE is raised to
//	          the hard limit; the test is skipped, with the reason, if that
//	          is too low)
//	slow      a client pipelines -slow-gets GETs of a -slow-value value and
//	          reads the replies at -slow-rate for -slow-time: how far the
//	          server's RSS grows
//	pipeline  -P deep pipelined load (-pipe-n requests per test, -pipe-d byte
//	          values) against -pipe-servers with 1 loop and
//	          with -loops loops: requests/s, p50/p99, the server's CPU and
//	          context switches, the load generator's CPU; -pin-server and
//	          -pin-client put them on given CPUs (taskset)
//
// Servers run interleaved: every round runs each server once, the order
// rotating from round to round, and the tables show medians over -rounds.
// The "done when" checks compare each netloop configuration with the best
// configuration of gnet and nbio round by round and report the median
// ratio, and each library that ran with more loops and with one is shown
// both ways (many against one, round by round); -merge pools the rounds of
// earlier runs.
//
// The load comes from redis-benchmark (Debian's redis-tools) when it is on
// PATH, else from the driver's own Go load generator (-load go forces it):
// the same tests, closed loop, nearest-rank percentiles over every request.
//
// Usage, from this directory:
//
//	go run . [-run bursty,idle,slow,pipeline] [-rounds 3] [-out DIR] [flags]
//	go run . -smoke      # a few seconds of everything, Go load generator
//
// With -out it writes DIR/results.json (every session, its RSS samples and
// the medians) and DIR/rss.png (RSS over time of the first round, every
// server on one plot; -chart names another file). It exits with status 1
// if any server failed, answered wrongly or did not exit cleanly.
package main
