package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// threadCPU is the CPU time of the calling thread.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the CPU time all threads of process pid have run, summed from
// /proc/<pid>/task/*/schedstat (nanoseconds on the CPU, user and kernel
// alike, as getrusage counts a thread's): how BenchmarkScreen measures the
// tmux server, which runs in its own process. 0 when it cannot be read.
func procCPU(pid int) time.Duration {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/schedstat")
	var sum time.Duration
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.Fields(string(b) + " 0")[0], 10, 64)
		if err == nil {
			sum += time.Duration(v)
		}
	}
	return sum
}
