package sdktest

import (
	"os"
	"path/filepath"
	"sync"

	"github.com/tetratelabs/wazero"
)

var (
	cacheOnce sync.Once
	cache     wazero.CompilationCache
)

// sharedCache keeps compiled plugins across test runs in the user cache
// directory, so repeated `go test` runs do not pay the compile again.
func sharedCache() wazero.CompilationCache {
	cacheOnce.Do(func() {
		dir, err := os.UserCacheDir()
		if err == nil {
			cache, err = wazero.NewCompilationCacheWithDir(filepath.Join(dir, "termhost", "wazero-test-sdk"))
		}
		if err != nil || cache == nil {
			cache = wazero.NewCompilationCache()
		}
	})
	return cache
}
