package mcp_test

import "os"

// testCacheBase is where the tests keep compiled plugins: under
// TERMHOST_CACHE_DIR when it is set (make test sets it to a directory it
// removes afterwards), else in the user cache directory, so that repeated
// `go test` runs do not compile again.
func testCacheBase() (string, error) {
	if d := os.Getenv("TERMHOST_CACHE_DIR"); d != "" {
		return d, nil
	}
	return os.UserCacheDir()
}
