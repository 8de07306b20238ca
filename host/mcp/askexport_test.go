package mcp

import "time"

// SetAskWait shortens how long one call waits for the person (askWait)
// until the returned func restores it.
func SetAskWait(d time.Duration) (restore func()) {
	askWaitFor.Store(int64(d))
	return func() { askWaitFor.Store(0) }
}
