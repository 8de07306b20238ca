//go:build !race

package render

// slowdown scales time bounds (1 without the race detector).
const slowdown = 1
