//go:build linux

package rawio

import (
	"os"
	"testing"
)

// TestSleepingFileIsTimed: a file from NewSleepingFile adds its system
// calls' time to Slept; one from NewFile does not.
func TestSleepingFileIsTimed(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	buf := make([]byte, 16)
	plain, timed := NewFile(r), NewSleepingFile(r)
	if plain == nil || timed == nil {
		t.Fatal("a pipe's read end is not pollable")
	}
	w.Write([]byte("x"))
	before := Slept()
	if n, err := plain.Read(buf); n != 1 || err != nil {
		t.Fatalf("plain read: %d, %v", n, err)
	}
	if got := Slept(); got != before {
		t.Errorf("a plain file's read moved Slept from %v to %v", before, got)
	}
	w.Write([]byte("y"))
	if n, err := timed.Read(buf); n != 1 || err != nil {
		t.Fatalf("timed read: %d, %v", n, err)
	}
	if got := Slept(); got <= before {
		t.Errorf("a sleeping file's read left Slept at %v (was %v)", got, before)
	}
}
