//go:build race

package render

// slowdown scales time bounds: the race detector makes this code about 20× slower.
const slowdown = 20
