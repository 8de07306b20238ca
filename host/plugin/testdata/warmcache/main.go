// Command warmcache compiles plugins into a wazero compilation cache
// directory, exactly as host/plugin does by default (through internal/wasmhost,
// guarded), so tests
// built with -race (under which wazero's compiler is about ten times slower)
// find them compiled:
//
//	go run ./testdata/warmcache <cache dir> <plugin.wasm>...
package main

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/tetratelabs/wazero"

	"github.com/termhost/termhost/internal/wasmhost"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: warmcache <cache dir> <plugin.wasm>...")
		os.Exit(2)
	}
	ctx := context.Background()
	cache, err := wazero.NewCompilationCacheWithDir(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cache.Close(ctx)
	var wg sync.WaitGroup
	failed := false
	var mu sync.Mutex
	for _, p := range os.Args[2:] {
		wg.Go(func() {
			wasm, err := os.ReadFile(p)
			if err == nil {
				var m *wasmhost.Module
				if m, err = wasmhost.Compile(ctx, wasm, wasmhost.Options{Cache: cache, Guard: true}); err == nil {
					m.Close(ctx)
				}
			}
			if err != nil {
				mu.Lock()
				failed = true
				fmt.Fprintf(os.Stderr, "%s: %v\n", p, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failed {
		os.Exit(1)
	}
}
