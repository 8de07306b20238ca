// Package plugins holds termhost's first-party plugins, one Go main package
// each (built for GOOS=wasip1 with sdk/cmd/wasmbuild), and embeds their
// committed .wasm files so that `go install` yields a working binary.
// Only cmd/termhost imports this package; host/ never does.
package plugins

import (
	"embed"
	"io/fs"
)

//go:embed telnet/telnet.wasm shell/shell.wasm vt/vt.wasm ssh/ssh.wasm dialect/dialect.wasm
var embedded embed.FS

// FS returns the built plugins; the registry loads every *.wasm in it.
func FS() fs.FS { return embedded }
