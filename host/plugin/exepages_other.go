//go:build !linux

package plugin

// releaseExePages: see exepages_linux.go; elsewhere the pages stay.
func releaseExePages() {}
