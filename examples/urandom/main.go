package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/idlemux/idlemux/internal/cpuburn"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit status: 0 on success, 1 if
// a run failed or lost bytes, 2 for bad input.
func run(args []string, stdout, stderr io.Writer) int {
	cpuburn.Main() // -busy starts this program as its burner: then it never returns
	limit, err := fdLimit()
	if err != nil {
		fmt.Fprintf(stderr, "urandom: %v\n", err)
		return 1
	}
	env := environ{gogc: os.Getenv("GOGC"), procs: os.Getenv("GOMAXPROCS"), numCPU: runtime.NumCPU(), fdLimit: limit}
	c, err := parseConfig(args, env, stdout)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "urandom: %v\n", err)
		return 2
	}
	if label, ok := os.LookupEnv(childEnv); ok {
		err = runChild(c, label, stdout)
	} else {
		err = runParent(c, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "urandom: %v\n", err)
		return 1
	}
	return 0
}
