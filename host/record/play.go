package record

import (
	"io"
	"time"
)

// Play writes a recording's output to w with its timing: each output
// event waits for its time divided by speed, every pause shortened to at
// most idle (0: as recorded).
func Play(w io.Writer, c *Cast, speed float64, idle time.Duration) error {
	start := time.Now()
	var shift time.Duration // pauses cut short so far
	var prev time.Duration
	for _, e := range c.Events {
		if e.Code != "o" {
			continue
		}
		at := time.Duration(e.Time / speed * float64(time.Second))
		if idle > 0 && at-prev > idle {
			shift += at - prev - idle
		}
		prev = at
		if d := time.Until(start.Add(at - shift)); d > 0 {
			time.Sleep(d)
		}
		if _, err := io.WriteString(w, e.Data); err != nil {
			return err
		}
	}
	return nil
}
