// Package core is the VT/xterm terminal emulator of the vt plugin: a pure,
// sans-IO state machine in the manner of alacritty/vte and libvterm.
//
// Bytes from the peer go in through Terminal.Write; the screen, the
// scrollback and the modes come out through accessors, and the answers to
// terminal queries (DSR, DA, DECRQM, OSC colour queries…) through
// Terminal.Replies, to be sent back to the peer and never shown.
//
// Layers, bottom up:
//
//   - parser.go: the DEC ANSI parser after Paul Williams' state diagram.
//     C0 controls run in every state, CAN and SUB abort a sequence, and
//     strings (OSC, DCS, SOS/PM/APC) are bounded: longer ones are dropped,
//     never buffered. A run of printable ASCII skips the state machine.
//   - edit.go, scroll.go, csi.go, modes.go, sgr.go, strings.go, reply.go:
//     the terminal state (cursor, pen, margins, tab stops, charsets, modes)
//     and the operations on it; queries are answered into Replies.
//   - screen.go: rows in a ring so a full-screen scroll moves an index.
//     A cell is one uint64 without pointers: a rune (or an index into a
//     table of characters with combining marks), a style index into a
//     per-terminal table of interned pens, and width flags. Rows of plain
//     default-style ASCII also mirror their text so the scrollback copies it.
//   - scrollback.go: a capped ring of compact lines, UTF-8 text plus style
//     runs, packed end to end in 16 KiB blocks with a 4-byte index entry
//     per line; blocks freed by evicted lines are reused once full.
//   - resize.go: reflow of soft-wrapped lines on the main screen.
//   - marshal.go: the whole state as bytes, for handing a session to another
//     instance.
//
// The package has no dependencies, starts no goroutines and does no I/O,
// so it builds unchanged for GOOS=wasip1.
package core
