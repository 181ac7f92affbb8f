package gcstep

import (
	"testing"
	"time"
)

// The tests use the standard library only: they report "what: got X,
// want Y" and stop (must*) where going on would only add noise.

func equal[T comparable](t testing.TB, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func mustEqual[T comparable](t testing.TB, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

func check(t testing.TB, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
}

const (
	us = time.Microsecond
	ms = time.Millisecond
)

// newRuntimeEnv returns a Runtime over its own core in e.
func newRuntimeEnv(e env, opts ...Option) *Runtime {
	cfg := configure(opts)
	return newCore(e, cfg, false, true).join(cfg)
}
