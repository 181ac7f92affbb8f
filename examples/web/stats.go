package main

import (
	"encoding/json"
	"net/http"

	"github.com/idlemux/idlemux/gcstep"
)

// stats is what GET /stats reports: what the collector and the stepper
// did so far, for benchmarks that drive the server from outside.
type stats struct {
	GCCycles      uint64 `json:"gc_cycles"`
	Stepper       bool   `json:"stepper"`
	Releases      uint64 `json:"releases"`
	ReleasedBytes uint64 `json:"released_bytes"`
	CyclesInline  uint64 `json:"cycles_inline"`
}

// statsHandler serves GET /stats; rt is nil with the stepper off.
func statsHandler(rt *gcstep.Runtime) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := stats{GCCycles: gcCycles(), Stepper: rt != nil}
		if rt != nil {
			st := rt.Stats()
			s.Releases, s.ReleasedBytes, s.CyclesInline = st.Releases, st.ReleasedBytes, st.CyclesInline
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s)
	}
}
