//go:build !linux

package main

import "time"

// threadCPU is 0 where the thread's CPU time is not read: BenchmarkGhostty
// then reports wall-clock figures only.
func threadCPU() time.Duration { return 0 }

// procCPU is 0 where a process's CPU time is not read: BenchmarkScreen then
// reports tmux's wall-clock figure only.
func procCPU(pid int) time.Duration { return 0 }
