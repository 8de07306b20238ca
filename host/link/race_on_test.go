//go:build race

package link

// raceEnabled: the race detector allocates, so allocation counts are not kept under it.
const raceEnabled = true
