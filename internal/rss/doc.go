// Package rss reports how much memory this process holds resident: its peak
// resident set size (the high-water mark) and its current one.
//
// On Linux both come from /proc/self/status (VmHWM and VmRSS), which is
// exact and cheap. Elsewhere the peak comes from getrusage(2), whose
// ru_maxrss is in bytes on darwin and in kilobytes on the BSDs; the current
// size has no portable source there and Current reports
// errors.ErrUnsupported.
//
// The examples and the benchmarks use it to compare memory footprints, one
// process per measurement, since a peak can only grow.
package rss
