// Command editor is a test app: a tiny full-screen editor. It opens the
// file named as its argument (created if missing); arrows move, printable
// characters insert, Backspace deletes, Enter splits the line, Ctrl-S saves
// ("saved N bytes"), Ctrl-Q quits. It enables bracketed paste and inserts
// pasted text literally, and asks the terminal for the cursor position at
// start ("cpr ok" or "no CPR" in the status line), so tests exercise query
// answering.
package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/termhost/termhost/internal/testapps"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: editor FILE")
		os.Exit(2)
	}
	name := os.Args[1]
	data, _ := os.ReadFile(name)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	restore, err := testapps.Raw(0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out := os.Stdout
	fmt.Fprint(out, "\x1b[?1049h\x1b[?2004h\x1b[6n")
	in := make(chan []byte, 16)
	go func() {
		for {
			b := make([]byte, 4096)
			n, err := os.Stdin.Read(b)
			if err != nil {
				close(in)
				return
			}
			in <- b[:n]
		}
	}()
	status := "no CPR"
	var pend []byte
	select {
	case b := <-in:
		pend = b
		if i := strings.IndexByte(string(pend), 'R'); i >= 0 && strings.HasPrefix(string(pend), "\x1b[") {
			status, pend = "cpr ok", pend[i+1:]
		}
	case <-time.After(time.Second):
	}
	row, col := 0, 0
	draw := func() {
		fmt.Fprint(out, "\x1b[H\x1b[2J")
		for _, l := range lines {
			fmt.Fprintf(out, "%s\r\n", l)
		}
		fmt.Fprintf(out, "\x1b[24;1H\x1b[7m %s \x1b[0m\x1b[%d;%dH", status, row+1, col+1)
	}
	insert := func(s string) {
		for _, r := range s {
			if r == '\n' || r == '\r' {
				l := lines[row]
				lines = append(lines[:row+1], append([]string{l[col:]}, lines[row+1:]...)...)
				lines[row] = l[:col]
				row, col = row+1, 0
				continue
			}
			l := lines[row]
			lines[row] = l[:col] + string(r) + l[col:]
			col += len(string(r))
		}
	}
	pasting := false
	for {
		draw()
		for len(pend) > 0 {
			s := string(pend)
			switch {
			case strings.HasPrefix(s, "\x1b[200~"):
				pasting, pend = true, pend[6:]
			case strings.HasPrefix(s, "\x1b[201~"):
				pasting, pend = false, pend[6:]
			case pasting:
				end := strings.Index(s, "\x1b[201~")
				if end < 0 {
					end = len(s)
				}
				insert(s[:end])
				pend = pend[end:]
			case strings.HasPrefix(s, "\x1b[A") && row > 0:
				row, col, pend = row-1, min(col, len(lines[row-1])), pend[3:]
			case strings.HasPrefix(s, "\x1b[B") && row < len(lines)-1:
				row, col, pend = row+1, min(col, len(lines[row+1])), pend[3:]
			case strings.HasPrefix(s, "\x1b[C"):
				col, pend = min(col+1, len(lines[row])), pend[3:]
			case strings.HasPrefix(s, "\x1b[D"):
				col, pend = max(col-1, 0), pend[3:]
			case pend[0] == 0x1b:
				pend = pend[1:]
			case pend[0] == 0x13: // ^S
				text := strings.Join(lines, "\n") + "\n"
				if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
					status = "error: " + err.Error()
				} else {
					status = fmt.Sprintf("saved %d bytes", len(text))
				}
				pend = pend[1:]
			case pend[0] == 0x11: // ^Q
				fmt.Fprint(out, "\x1b[?2004l\x1b[?1049l")
				restore()
				os.Exit(0)
			case pend[0] == 0x7f:
				if col > 0 {
					l := lines[row]
					lines[row] = l[:col-1] + l[col:]
					col--
				}
				pend = pend[1:]
			case pend[0] == '\r':
				insert("\n")
				pend = pend[1:]
			case pend[0] >= 0x20:
				insert(string(pend[0]))
				pend = pend[1:]
			default:
				pend = pend[1:]
			}
		}
		draw()
		b, ok := <-in
		if !ok {
			restore()
			return
		}
		pend = b
	}
}
