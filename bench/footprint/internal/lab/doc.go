// Package lab holds the footprint lab's workloads and the child side of a
// run: one workload under one idle-stepping policy, with RSS and heap
// sampled, in a process of its own.
//
// The child is a separate, small command (bench/footprint/child) rather
// than the lab re-executing itself, so that what the lab links for its
// charts (fonts, image encoders) is not resident in the processes whose
// memory it measures.
package lab
