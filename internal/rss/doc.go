// Package rss reports how much memory this process holds resident: its peak
// resident set size (the high-water mark) and its current one.
//
// On Linux both come from /proc/self/status (VmHWM and VmRSS), which is
// exact and cheap, and getrusage is only the fallback: its ru_maxrss also
// remembers the peak of the image the process replaced by exec, which for a
// child forked from a big parent can be the parent's size. Elsewhere the peak comes from getrusage(2), whose
// ru_maxrss is in bytes on darwin and in kilobytes on the BSDs; the current
// size has no portable source there and Current reports
// errors.ErrUnsupported.
//
// The examples and the benchmarks use it to compare memory footprints, one
// process per measurement, since a peak can only grow.
package rss
