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
package main
