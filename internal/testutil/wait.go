package testutil

import (
	"testing"
	"time"
)

// Poll calls cond until it returns true or within has passed, and reports
// whether it did; cond is called once more at the deadline, so a condition
// that holds by then is never missed. The pause between calls starts at a
// millisecond and doubles up to 20 ms: a condition that holds at once costs
// nothing, one that takes seconds costs few calls. Poll asserts nothing, so
// any goroutine may use it.
func Poll(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	pause := time.Millisecond
	for {
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(pause, left))
		pause = min(2*pause, 20*time.Millisecond)
	}
}

// Eventually is Poll that fails the test, naming what it waited for, when
// cond has not held within the bound.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(within, cond) {
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}
