// Child runs one footprint-lab workload and writes what it measured as JSON;
// the footprint command starts it once per run, with the run described in
// the environment variable IDLEMUX_FOOTPRINT_CHILD and GOGC and GOMEMLIMIT
// set for it. The tcp workload starts it once more as its client, described
// in IDLEMUX_FOOTPRINT_CLIENT, and the lab starts it as the burner of its
// busy-core condition (see internal/cpuburn). It is not meant to be run by hand: use
//
//	go run ./bench/footprint -out DIR
//
// It takes no flags.
package main

import (
	"fmt"
	"os"

	"github.com/idlemux/idlemux/bench/footprint/internal/lab"
	"github.com/idlemux/idlemux/internal/cpuburn"
)

func main() {
	cpuburn.Main() // the lab's busy core is this command started again
	if spec := os.Getenv(lab.ClientEnv); spec != "" {
		lab.ClientMain(spec)
		return
	}
	spec := os.Getenv(lab.ChildEnv)
	if spec == "" {
		fmt.Fprintln(os.Stderr, "child: run by the footprint command (go run ./bench/footprint -out DIR), not by hand")
		os.Exit(2)
	}
	lab.ChildMain(spec)
}
