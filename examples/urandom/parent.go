package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// errDigest reports runs that lost or changed bytes.
var errDigest = errors.New("digest mismatch: the bytes read are not the bytes written")

// runParent runs every mode c.runs times, interleaved, each run in its own
// child process, and prints each run as a JSON line (-json) or the medians
// as a table. A failed run stops everything; a digest mismatch is reported
// after the output, as errDigest.
func runParent(c config, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this program to run it again: %w", err)
	}
	var results []result
	for run := 1; run <= c.runs; run++ {
		for _, m := range c.modes {
			label := string(m)
			if c.runs > 1 {
				label = fmt.Sprintf("%s %d/%d", m, run, c.runs)
			}
			r, err := spawn(exe, c, m, label, stderr)
			if err != nil {
				return err
			}
			r.Run = run
			results = append(results, r)
			if c.json {
				if err := writeJSONLine(stdout, r); err != nil {
					return err
				}
			}
		}
	}
	if !c.json {
		if err := writeTable(stdout, c, summarize(results, c.modes)); err != nil {
			return err
		}
	}
	return checkDigests(results)
}

// checkDigests returns errDigest, naming the runs, if any run lost bytes.
func checkDigests(results []result) error {
	var bad []string
	for _, r := range results {
		if !r.DigestOK {
			bad = append(bad, fmt.Sprintf("%s run %d", r.Mode, r.Run))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w (%s)", errDigest, strings.Join(bad, ", "))
	}
	return nil
}
