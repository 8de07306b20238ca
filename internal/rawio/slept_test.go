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

// TestPending: Pending says what the descriptor holds now, without
// reading it, and 0 once it has been read.
func TestPending(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f := NewFile(r)
	if got := f.Pending(); got != 0 {
		t.Errorf("an empty pipe: Pending %d, want 0", got)
	}
	w.Write([]byte("abc"))
	if got := f.Pending(); got != 3 {
		t.Errorf("after 3 bytes: Pending %d, want 3", got)
	}
	if n, err := f.Read(make([]byte, 8)); n != 3 || err != nil {
		t.Fatalf("read: %d, %v", n, err)
	}
	if got := f.Pending(); got != 0 {
		t.Errorf("after the read: Pending %d, want 0", got)
	}
	if a := testing.AllocsPerRun(100, func() { f.Pending() }); a != 0 {
		t.Errorf("Pending allocates %.0f times a call, want 0", a)
	}
}
