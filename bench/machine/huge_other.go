//go:build !linux

package main

// adviseHuge reports that huge pages cannot be advised outside Linux.
func adviseHuge([]byte) error { return errUnsupported }
