// Package gcstep does bounded units of garbage-collection work when the
// caller is idle.
//
// The Stepper interface is the contract the multiplexer in package poller
// calls at every idle moment: one bounded unit of work, and an honest answer
// to "would calling again now do anything?". Steppers compose with Chain and
// adapt plain functions with Func.
package gcstep
