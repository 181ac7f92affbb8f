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
}

// errHelp is returned by parseConfig for -h: not a failure.
var errHelp = flag.ErrHelp

// parseConfig parses and validates the command line. envGOGC is the
// environment's GOGC ("" when unset) and fdLimit the open-file limit
// (RLIMIT_NOFILE), both passed in so that tests control them. Usage goes to
// usage only for -h; every error is one line, suitable for printing as is.
func parseConfig(args []string, envGOGC string, fdLimit uint64, usage io.Writer) (config, error) {
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

	c := config{length: *length, readers: *readers, chunk: *chunk, runs: *runs, json: *asJSON}
	var err error
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
