//go:build !wasip1

package sdk

import "time"

// Register is a no-op outside wasm: native tests build a Runtime with
// NewRuntime from the same Factory instead.
func Register(Factory) {}

// NowMs is the wall clock in Unix milliseconds.
func NowMs() int64 { return time.Now().UnixMilli() }
