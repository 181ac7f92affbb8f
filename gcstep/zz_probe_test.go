package gcstep

import "testing"

func TestZZProbe(t *testing.T) {
	for _, p := range profiles {
		for _, tr := range traces {
			for _, gogc := range []int{100, 400, -1} {
				w := simulate(t, p, tr, gogc, true)
				o := simulate(t, p, tr, gogc, false)
				t.Logf("%-18s %-12s %4d avg %.2f peak %.2f cpu %.3f wall %.3f ours %d rel %d", p.name, tr.name, gogc, w.avg/o.avg, float64(w.peak)/float64(o.peak), float64(w.cpu)/float64(o.cpu), float64(w.wall)/float64(o.wall), w.ours, w.stats.Releases)
			}
		}
	}
}
