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
// directory, so repeated `go test` runs do not pay the compile again; or
// under TERMHOST_CACHE_DIR when that is set (make test sets it to a
// directory it removes afterwards).
func sharedCache() wazero.CompilationCache {
	cacheOnce.Do(func() {
		dir, err := os.UserCacheDir()
		if d := os.Getenv("TERMHOST_CACHE_DIR"); d != "" {
			dir, err = d, nil
		}
		if err == nil {
			cache, err = wazero.NewCompilationCacheWithDir(filepath.Join(dir, "termhost", "wazero-test-sdk"))
		}
		if err != nil || cache == nil {
			cache = wazero.NewCompilationCache()
		}
	})
	return cache
}

// Cache is the compilation cache Wasm uses, for a test or benchmark that
// compiles with wasmhost itself.
func Cache() wazero.CompilationCache { return sharedCache() }
