//go:build !linux

package main

import "time"

// threadCPU is 0 where the thread's CPU time is not read: BenchmarkGhostty
// then reports wall-clock figures only.
func threadCPU() time.Duration { return 0 }
