// Command web measures examples/web, a JSON API on net/http, under bursts
// of load from wrk with quiet gaps between them, with and without the
// idle stepper (package httpidle), and against the plain server with
// GOGC lowered:
//
//	go run ./bench/web -rounds 3
//
// Each configuration runs in a server process of its own, one session per
// configuration and gap length, the configurations interleaved and their
// order rotated from round to round. A session starts the server, reads
// its resident set size before any load (the pre-load RSS), then drives
// -bursts bursts of wrk (-burst long, -conns connections, GET
// /items?n=N) with -gaps of quiet after each, and reads the server's
// RSS 100 ms, 1 s and 5 s after each burst (those that fit in the gap) and
// its CPU time from /proc. A steady session (-steady) runs one long burst
// to show what the stepper does under load without gaps.
//
// It prints a table of medians over every burst of every round, with
// ratios to the stepper-off server, writes results.json and draws an RSS
// chart per gap length (first round) into -out. It needs wrk (Debian:
// apt-get install wrk) and Linux's /proc.
//
// With -day it runs a day's schedule instead: bursts of different sizes
// and quiet gaps from 1 s to past the runtime's forced collection (two
// minutes), for examples/web under wrk, grpcidle's example server under
// its example/load and examples/kv under redis-benchmark (-servers; kv's
// bursts are counts of requests, -kv-rate a second, as redis-benchmark
// knows no duration), each configuration in a server process of its own,
// interleaved. Besides on, off and gogc=N, the configurations
// include memlimit=N (GOMEMLIMIT), tuner (a GOGC tuner, as bytedance's
// gctuner), freeos (debug.FreeOSMemory every 10 s) and, for examples/web,
// budget=N (the stepper at WithBudget N %):
//
//	go run ./bench/web -day long -rounds 1     # 48 min
//	go run ./bench/web -day medium -rounds 2   # 25 min
//	go run ./bench/web -day short -rounds 1    # 1 min, for CI
//
// It prints, per server, the RSS over start-up integrated over the run
// (RSS·s), the RSS at the end of each gap, and p99, req/s and CPU per
// request as ratios to the plain server (off), writes day/day.json and
// draws day/day-<server>.png for each server into -out.
package main
