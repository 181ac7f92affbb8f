package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// cpuCgroup is where cgroup v1 mounts its cpu controller.
const cpuCgroup = "/sys/fs/cgroup/cpu"

// makeCPUQuota makes a cgroup with a quota of one CPU (100 ms of CPU time
// per 100 ms period) under cgroup v1's cpu controller, and returns its
// directory and a function that removes it, once every process in it has
// exited. It needs that controller, mounted and writable (root); without
// it the error says what is missing.
func makeCPUQuota() (dir string, remove func(), err error) {
	if _, err := os.Stat(filepath.Join(cpuCgroup, "cpu.cfs_quota_us")); err != nil {
		return "", nil, fmt.Errorf("no cgroup v1 cpu controller at %s (a 1-CPU quota needs it): %w", cpuCgroup, err)
	}
	dir = filepath.Join(cpuCgroup, fmt.Sprintf("idlemux-frontier-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("making a cgroup for the 1-CPU quota (needs root): %w", err)
	}
	remove = func() { os.Remove(dir) } // rmdir: a cgroup's files go with it
	for _, kv := range [][2]string{{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", "100000"}} {
		if err := os.WriteFile(filepath.Join(dir, kv[0]), []byte(kv[1]), 0o644); err != nil {
			remove()
			return "", nil, fmt.Errorf("setting %s of the 1-CPU quota's cgroup: %w", kv[0], err)
		}
	}
	return dir, remove, nil
}
