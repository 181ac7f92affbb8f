package gcstep

import "time"

// quiet reports whether every loop using the Runtime has been quiet for
// its quiet period at now. For a caller that reports nothing to the
// Runtime (not a LoopObserver caller), quiet means that the program
// allocated nothing for the release delay. rt.mu must be held.
func (rt *Runtime) quiet(now time.Duration) bool {
	if rt.cfg.releaseDelay == 0 {
		return false
	}
	observed := false
	for _, l := range *rt.loops.Load() {
		at, ok := l.quietAt()
		if !ok {
			continue
		}
		observed = true
		if now < at {
			return false
		}
	}
	if !observed {
		return now-rt.activityAt >= rt.cfg.releaseDelay && rt.armed.Load()
	}
	return true
}

// quietSince is when the current quiet stretch began: the last work of
// any loop. rt.mu must be held.
func (rt *Runtime) quietSince() time.Duration {
	var since time.Duration
	observed := false
	for _, l := range *rt.loops.Load() {
		l.mu.Lock()
		if l.observed && !l.closed {
			since, observed = max(since, l.lastWork), true
		}
		l.mu.Unlock()
	}
	if !observed {
		return rt.activityAt
	}
	return since
}

// emptyGap empties the gap once per quiet stretch: if the program
// allocated enough since the last release and the release pays (see
// releasePays), it starts the release (a cycle, then the freed memory
// returned to the OS) on a goroutine of its own, charged to the CPU cap.
// A release that does not pay yet is priced again once the stretch has
// lasted twice as long. rt.mu must be held.
func (rt *Runtime) emptyGap(budget, now time.Duration) (more bool) {
	if rt.releasing || now < time.Duration(rt.retryAt.Load()) {
		return false
	}
	if !rt.armed.Load() {
		rt.clean() // nothing to empty: the loops need not wake for it
		return false
	}
	if !rt.releasePays(now) {
		if budget > 0 {
			rt.stats.DeclinedRelease++
			rt.retryAt.Store(int64(now + max(now-rt.quietSince(), rt.cfg.releaseDelay)))
		}
		return false
	}
	rt.refill(now)
	need := min(rt.releaseEstimate(now), rt.capacity())
	if rt.tokens < need {
		if budget > 0 {
			rt.stats.DeclinedCap++
		}
		return false // the loops stay dirty: NextStep brings them back
	}
	if budget <= 0 {
		return true
	}
	rt.clean()
	rt.stats.QuietPeriods++
	rt.startRelease(need, rt.quietSince(), false)
	return false
}

// startRelease starts a release on a goroutine of its own, charged need
// in advance: after a quiet stretch that began at since, or with trim in
// the middle of activity (see trimPays), which collects once where a
// quiet stretch's release collects twice. rt.mu must be held.
func (rt *Runtime) startRelease(need, since time.Duration, trim bool) {
	if !trim && since > rt.trim.at {
		rt.endTrimHold(since) // from here the quiet stretch's release holds the pages
	}
	rt.armed.Store(false)
	rt.releasedAllocs = rt.r.allocs
	rt.releasing = true
	if !trim {
		rt.quietReleaseAt.Store(int64(rt.env.now()))
	}
	before := rt.r.released
	rt.charge(need)
	rt.wg.Add(1)
	rt.env.spawn(func() {
		defer rt.wg.Done()
		start := rt.env.now()
		if trim {
			rt.env.trim()
		} else {
			rt.env.release()
		}
		end := rt.env.now()
		rt.mu.Lock()
		defer rt.mu.Unlock()
		rt.releasing = false
		rt.charge(end - start - need)
		rt.p.release.add(max(end-start, 1))
		rt.env.read(&rt.r)
		rt.prevAllocs = rt.r.allocs     // the release's cycle ended just now
		rt.releasedAllocs = rt.r.allocs // what the release allocated is not the program's
		rt.observe(end)
		rt.armed.Store(rt.r.allocs-rt.releasedAllocs >= rt.cfg.minGarbage)
		rt.stats.Releases++
		rt.stats.ReleaseTime += end - start
		if trim {
			rt.stats.Trims++
			rt.trim.at, rt.trim.back = end, false
		} else {
			rt.stats.LastReleaseAfterQuiet = end - since
		}
		if rt.r.released > before {
			rt.stats.ReleasedBytes += rt.r.released - before
		}
	})
}

// expectedQuiet is how much longer the quiet stretch that began at the
// loops' last work is expected to last at now: what the loops' recent
// stretches (the longest of their medians) leave of it, and at least as
// long again as it has lasted (a stretch that outlived the usual one is
// a longer kind). Before any stretch is known, a second. Once releases
// were made, never more than they got: the median of how long the
// stretches went on after their release began.
func (rt *Runtime) expectedQuiet(now time.Duration) time.Duration {
	elapsed := max(now-rt.quietSince(), 0)
	var typical, got time.Duration
	known, learned := false, false
	for _, l := range *rt.loops.Load() {
		if s, ok := l.expectedStretch(); ok {
			typical, known = max(typical, s), true
		}
		if a, ok := l.afterRelease(); ok && (!learned || a < got) {
			got, learned = a, true
		}
	}
	q := max(firstQuiet-elapsed, elapsed)
	if known {
		q = max(typical-elapsed, elapsed)
	}
	if learned {
		// What the releases before got, the stretch's rest after
		// each began (as short as any loop's), bounds what this one
		// will: where something stops the whole process (a cgroup's
		// CPU quota stops every thread at once for tens of
		// milliseconds), the loop's first look after it finds its
		// last work that long ago, and the work comes back a moment
		// later.
		q = min(q, got)
	}
	return q
}

// firstQuiet is how long the first quiet stretch is expected to last,
// before any was measured.
const firstQuiet = time.Second

// releaseEstimate is what a release is expected to cost: what the last
// ones took, or before one a cycle and about as much again to return the
// pages.
func (rt *Runtime) releaseEstimate(now time.Duration) time.Duration {
	if d := rt.p.release.get(); d > 0 {
		return d
	}
	return 2 * rt.cost.estimate(rt.r.live, now)
}

// legacyNextStep is NextStep for a caller that reports nothing: the
// release falls due once the program has allocated nothing for the
// release delay.
func (rt *Runtime) legacyNextStep() (time.Duration, bool) {
	if !rt.mu.TryLock() {
		return 0, false
	}
	defer rt.mu.Unlock()
	if !rt.armed.Load() || rt.releasing {
		return 0, false
	}
	at := max(rt.activityAt+rt.cfg.releaseDelay, time.Duration(rt.retryAt.Load()))
	return max(at-rt.env.now(), 0), true
}
