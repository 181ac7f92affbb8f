//go:build !linux

package main

import "errors"

// makeCPUQuota reports that a CPU quota needs Linux's cgroups.
func makeCPUQuota() (string, func(), error) {
	return "", nil, errors.New("a 1-CPU quota needs Linux's cgroup v1 cpu controller")
}
