// Package testutil holds what termhost's tests share: waiting for a
// condition instead of sleeping a fixed time (Eventually, Poll), skipping a
// test whose peer program is missing except under CI, where that is a
// failure (SkipUnlessCI, NeedProgram), and calling an MCP tool from any
// goroutine (CallTool). It is imported only by tests.
package testutil
