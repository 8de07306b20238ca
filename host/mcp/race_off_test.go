//go:build !race

package mcp_test

// raceOn: the race detector slows everything tenfold; figures skip under it.
const raceOn = false
