// Package machine measures what this machine charges for the things idle
// collection does: a collection cycle of an empty heap with one P and with
// every CPU, waking a goroutine whose thread has gone to sleep, faulting
// back a page given to the operating system, a system call. idlemux's
// results hang on these prices, which differ by an order of magnitude
// between a laptop and some virtual machines, so numbers from one machine
// are read on another through them.
//
// bench/machine prints them all; the urandom demo prints a quick probe of
// the first two beside its tables.
package machine
