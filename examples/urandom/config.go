package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// A mode is one way of reading the stream; see the command documentation.
type mode string

const (
	modeOff        mode = "off"
	modeIdle       mode = "idle"
	modeGoroutines mode = "goroutines"
	modeFloor      mode = "floor"
	modeThread     mode = "thread"
)

// allModes is the default, in the order runs are interleaved and rows shown.
var allModes = []mode{modeOff, modeIdle, modeGoroutines}

// knownModes adds the modes run only on request: floor is a reference
// point, not a way anyone would read the stream; thread is the off loop
// waiting the way it did before it parked in the netpoller.
var knownModes = append(allModes[:len(allModes):len(allModes)], modeFloor, modeThread)

// The defaults are the Ruby script's: 100 MB, ten dups, read(16384).
const (
	defaultLen     = 100_000_000
	defaultReaders = 10
	defaultChunk   = 16384

	// maxChunk keeps a typo from turning every read into an allocation
	// the machine cannot make.
	maxChunk = 1 << 30

	// fdReserve is what a run needs besides the dups: the standard
	// streams, the pipe's write end, /dev/urandom, the loop's epoll and
	// wake fds, the runtime's own, with room to spare.
	fdReserve = 16
)

// config is what the flags say, validated.
type config struct {
	modes   []mode
	length  int64
	readers int
	chunk   int
	gogc    string // GOGC of the run at hand: a child's, or one of gogcs
	gogcs   []string
	runs    int
	json    bool
	// busy lists the shares of one CPU, in percent, to keep busy in
	// another process during the runs; every mode runs at every level.
	busy []int
	// procs lists the GOMAXPROCS of the runs; every mode runs with each.
	procs []int
	// frontier lists the GOGC settings at which the off loop also runs,
	// so that the stepper is seen beside the best GOGC (see bestGOGC);
	// empty for none.
	frontier []string
	// probe asks for the machine's prices before the runs.
	probe bool
	// budget is the idle mode's gcstep.WithBudget; 0: the Runtime's
	// default.
	budget float64
}

// defaultFrontier is the GOGC settings at which the plain loop runs beside
// the stepper by default: a user can always turn GOGC down instead of
// running a stepper, so the stepper's result is read against the best of
// these that costs no more. They are bench/footprint's frontier.
var defaultFrontier = []string{"400", "200", "100", "50", "25", "10"}

// environ is what parseConfig reads from the environment, passed in so
// that tests control it.
type environ struct {
	gogc    string // $GOGC, "" when unset
	procs   string // $GOMAXPROCS, "" when unset
	numCPU  int    // runtime.NumCPU()
	fdLimit uint64 // the open-file limit (RLIMIT_NOFILE)
}

// errHelp is returned by parseConfig for -h: not a failure.
var errHelp = flag.ErrHelp

// parseConfig parses and validates the command line, with defaults from
// env. Usage goes to usage only for -h; every error is one line, suitable
// for printing as is.
func parseConfig(args []string, env environ, usage io.Writer) (config, error) {
	envGOGC, fdLimit := env.gogc, env.fdLimit
	fs := flag.NewFlagSet("urandom", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	modes := fs.String("mode", joinModes(allModes), "modes to run, comma-separated: off, idle, goroutines, floor, thread")
	length := fs.Int64("len", defaultLen, "bytes to copy from /dev/urandom")
	readers := fs.Int("readers", defaultReaders, "dups of the read end to multiplex")
	chunk := fs.Int("chunk", defaultChunk, "bytes asked for by each read, in a fresh buffer")
	defGOGC := envGOGC
	if defGOGC == "" {
		defGOGC = "100"
	}
	gogc := fs.String("gogc", defGOGC, `GOGC for the runs: a percentage or "off", or several, comma-separated, each run in turn`)
	runs := fs.Int("runs", 1, "runs of each mode, interleaved; the table shows medians")
	asJSON := fs.Bool("json", false, "print one JSON object per run, one per line")
	busy := fs.String("busy", "0", "percent of one CPU kept busy by another process during every run, comma-separated levels such as 0,50,100")
	defProcs := env.procs
	if defProcs == "" {
		defProcs = joinInts(machineProcs(env.numCPU))
	}
	procs := fs.String("procs", defProcs, "GOMAXPROCS for the runs, comma-separated; every mode runs with each (default: $GOMAXPROCS, else every CPU and 1)")
	frontier := fs.String("frontier", strings.Join(defaultFrontier, ","), `GOGC settings at which the off loop also runs, to find the best GOGC beside the idle mode; "none" for none`)
	budget := fs.Float64("budget", 0, "the idle mode's budget: the share of the program's CPU its stepper may spend (gcstep.WithBudget), such as 0.1; 0: the Runtime's default")
	probe := fs.Bool("probe", true, "measure what this machine charges for a GC cycle and a wakeup before the runs (well under a second)")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(usage, "usage: urandom [flags]")
			fs.SetOutput(usage)
			fs.PrintDefaults()
			return config{}, errHelp
		}
		return config{}, fmt.Errorf("%v (try -h)", err)
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q (try -h)", fs.Arg(0))
	}

	c := config{length: *length, readers: *readers, chunk: *chunk, runs: *runs, json: *asJSON, probe: *probe, budget: *budget}
	var err error
	if c.procs, err = parseProcs(*procs); err != nil {
		if !flagSet(fs, "procs") && env.procs != "" {
			err = fmt.Errorf("%w (the default, from $GOMAXPROCS)", err)
		}
		return config{}, err
	}
	if c.frontier, err = parseFrontier(*frontier); err != nil {
		return config{}, err
	}
	if c.modes, err = parseModes(*modes); err != nil {
		return config{}, err
	}
	if c.busy, err = parseBusy(*busy); err != nil {
		return config{}, err
	}
	for _, f := range strings.Split(*gogc, ",") {
		g, err := parseGOGC(strings.TrimSpace(f))
		if err != nil {
			if !flagSet(fs, "gogc") {
				err = fmt.Errorf("%w (the default, from $GOGC)", err)
			}
			return config{}, err
		}
		if slices.Contains(c.gogcs, g) {
			return config{}, fmt.Errorf("-gogc %q: %s given twice", *gogc, g)
		}
		c.gogcs = append(c.gogcs, g)
	}
	c.gogc = c.gogcs[0]
	switch {
	case c.length < 1:
		return config{}, fmt.Errorf("-len %d: want at least 1 byte", c.length)
	case c.chunk < 1 || c.chunk > maxChunk:
		return config{}, fmt.Errorf("-chunk %d: want 1 to %d bytes", c.chunk, maxChunk)
	case c.readers < 1:
		return config{}, fmt.Errorf("-readers %d: want at least 1", c.readers)
	case uint64(c.readers) > fdLimit-min(fdLimit, fdReserve):
		return config{}, fmt.Errorf("-readers %d: the open-file limit is %d, which leaves room for %d dups",
			c.readers, fdLimit, fdLimit-min(fdLimit, fdReserve))
	case c.runs < 1:
		return config{}, fmt.Errorf("-runs %d: want at least 1", c.runs)
	case !(c.budget >= 0 && c.budget <= 1):
		return config{}, fmt.Errorf("-budget %v: want a share from 0 (the default) to 1", c.budget)
	}
	return c, nil
}

// flagSet reports whether the flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseModes parses a comma-separated list of modes, such as "off,idle".
func parseModes(s string) ([]mode, error) {
	var modes []mode
	for _, f := range strings.Split(s, ",") {
		m := mode(strings.TrimSpace(f))
		if !isMode(m) {
			return nil, fmt.Errorf("-mode %q: unknown mode %q, want %s", s, m, strings.Join(modeNames(knownModes), ", "))
		}
		for _, seen := range modes {
			if seen == m {
				return nil, fmt.Errorf("-mode %q: %s given twice", s, m)
			}
		}
		modes = append(modes, m)
	}
	return modes, nil
}

func isMode(m mode) bool {
	for _, a := range knownModes {
		if a == m {
			return true
		}
	}
	return false
}

func modeNames(modes []mode) []string {
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = string(m)
	}
	return names
}

func joinModes(modes []mode) string { return strings.Join(modeNames(modes), ",") }

// parseBusy parses -busy: comma-separated percentages of one CPU, 0 to
// 100, each given once.
func parseBusy(s string) ([]int, error) {
	var levels []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 || n > 100 {
			return nil, fmt.Errorf("-busy %q: want percentages of one CPU from 0 to 100, comma-separated", s)
		}
		if slices.Contains(levels, n) {
			return nil, fmt.Errorf("-busy %q: %d given twice", s, n)
		}
		levels = append(levels, n)
	}
	return levels, nil
}

// machineProcs is the default -procs: every CPU and one P, or one P alone
// on a one-CPU machine.
func machineProcs(numCPU int) []int {
	if numCPU <= 1 {
		return []int{1}
	}
	return []int{numCPU, 1}
}

// parseProcs parses -procs: comma-separated GOMAXPROCS values, 1 and up,
// each given once.
func parseProcs(s string) ([]int, error) {
	var procs []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-procs %q: want GOMAXPROCS values (1 or more), comma-separated", s)
		}
		if slices.Contains(procs, n) {
			return nil, fmt.Errorf("-procs %q: %d given twice", s, n)
		}
		procs = append(procs, n)
	}
	return procs, nil
}

// parseFrontier parses -frontier: "none", or comma-separated GOGC
// percentages, each given once ("off" is no point of a frontier: its heap
// grows with the stream).
func parseFrontier(s string) ([]string, error) {
	if strings.TrimSpace(s) == "none" {
		return nil, nil
	}
	var gs []string
	for _, f := range strings.Split(s, ",") {
		g, err := parseGOGC(strings.TrimSpace(f))
		if err != nil || g == "off" {
			return nil, fmt.Errorf(`-frontier %q: want GOGC percentages, comma-separated, or "none"`, s)
		}
		if slices.Contains(gs, g) {
			return nil, fmt.Errorf("-frontier %q: %s given twice", s, g)
		}
		gs = append(gs, g)
	}
	return gs, nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// parseGOGC accepts what the runtime accepts in GOGC, less its leniency:
// "off" or a percentage (0 and up). The runtime reads anything else as 100,
// which would make a typo measure the wrong thing silently.
func parseGOGC(s string) (string, error) {
	if strings.EqualFold(s, "off") {
		return "off", nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return "", fmt.Errorf(`-gogc %q: want a percentage (0 or more) or "off"`, s)
	}
	return strconv.Itoa(n), nil
}
