package testutil

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	var n atomic.Int32
	if !Poll(5*time.Second, func() bool { return n.Add(1) == 5 }) {
		t.Fatal("a condition that holds at the fifth call was not seen")
	}
	start := time.Now()
	if Poll(50*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds was reported held")
	}
	if took := time.Since(start); took < 50*time.Millisecond || took > 2*time.Second {
		t.Errorf("Poll gave up after %v, want about 50ms", took)
	}
	// The condition is asked once more at the deadline.
	calls := 0
	Poll(0, func() bool { calls++; return false })
	if calls != 1 {
		t.Errorf("Poll(0) asked %d times, want once", calls)
	}
}
