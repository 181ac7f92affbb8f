//go:build !race

package gcstep

const raceEnabled = false
