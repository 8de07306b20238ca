package mcp

import "time"

// SetViewTTLs shortens the lives of the view's login codes and keys until
// the returned func restores them.
func SetViewTTLs(code, key time.Duration) (restore func()) {
	viewCodeTTLFor.Store(int64(code))
	viewKeyTTLFor.Store(int64(key))
	return func() {
		viewCodeTTLFor.Store(0)
		viewKeyTTLFor.Store(0)
	}
}
