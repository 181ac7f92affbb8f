package httpidle_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idlemux/idlemux/gcstep"
	"github.com/idlemux/idlemux/httpidle"
)

// nopWriter is a ResponseWriter that keeps nothing, so that the benchmark
// measures the wrapper, not a recorder.
type nopWriter struct{ h http.Header }

func (w nopWriter) Header() http.Header         { return w.h }
func (w nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w nopWriter) WriteHeader(int)             {}

// BenchmarkHandler is what the wrapper adds to a request: the same empty
// handler called directly (wrap=none, the baseline), through Handler and
// through Streams, and through Streams with one Pause and its resume
// (wrap=streams-pause), from GOMAXPROCS goroutines at once.
func BenchmarkHandler(b *testing.B) {
	empty := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	pausing := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		httpidle.Pause(r.Context())()
	})
	rt := gcstep.NewRuntime()
	defer rt.Close()
	work := rt.Work()
	defer work.Close()
	for _, c := range []struct {
		name string
		h    http.Handler
	}{
		{"none", empty},
		{"httpidle", httpidle.Handler(work, empty)},
		{"streams", httpidle.Streams(work, empty)},
		{"streams-pause", httpidle.Streams(work, pausing)},
	} {
		b.Run("wrap="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := nopWriter{h: http.Header{}}
				r := httptest.NewRequest("GET", "/", nil)
				for pb.Next() {
					c.h.ServeHTTP(w, r)
				}
			})
		})
	}
}
