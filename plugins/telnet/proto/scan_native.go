//go:build !wasm && !portablescan

package proto

import "bytes"

// indexByte is bytes.IndexByte, which is vectorized on native targets.
func indexByte(p []byte, c byte) int { return bytes.IndexByte(p, c) }
