// Command menu is a test app: a full-screen menu on the alternate screen,
// under application cursor keys, with the selected item in reverse video.
// Up/Down (CSI or SS3) and k/j move, Enter prints "selected: Item N" after
// leaving the alternate screen and exits 0; q exits 3.
package main

import (
	"fmt"
	"os"

	"github.com/termhost/termhost/internal/testapps"
)

func main() {
	restore, err := testapps.Raw(0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out := os.Stdout
	fmt.Fprint(out, "\x1b[?1049h\x1b[?1h\x1b[?25l")
	sel := 0
	draw := func() {
		fmt.Fprint(out, "\x1b[H\x1b[2J\x1b[1mMenu\x1b[0m\r\n")
		for i := 0; i < 5; i++ {
			if i == sel {
				fmt.Fprintf(out, "\x1b[7m> Item %d\x1b[0m\r\n", i+1)
			} else {
				fmt.Fprintf(out, "  Item %d\r\n", i+1)
			}
		}
	}
	quit := func(code int, msg string) {
		fmt.Fprint(out, "\x1b[?25h\x1b[?1l\x1b[?1049l")
		restore()
		if msg != "" {
			fmt.Println(msg)
		}
		os.Exit(code)
	}
	draw()
	buf := make([]byte, 64)
	var pend []byte
	for {
		n, err := os.Stdin.Read(buf)
		if err != nil {
			quit(0, "")
		}
		pend = append(pend, buf[:n]...)
		for len(pend) > 0 {
			switch {
			case len(pend) >= 3 && (string(pend[:3]) == "\x1b[A" || string(pend[:3]) == "\x1bOA"):
				sel, pend = max(sel-1, 0), pend[3:]
			case len(pend) >= 3 && (string(pend[:3]) == "\x1b[B" || string(pend[:3]) == "\x1bOB"):
				sel, pend = min(sel+1, 4), pend[3:]
			case pend[0] == 0x1b && len(pend) < 3:
				goto more
			case pend[0] == 'k':
				sel, pend = max(sel-1, 0), pend[1:]
			case pend[0] == 'j':
				sel, pend = min(sel+1, 4), pend[1:]
			case pend[0] == '\r' || pend[0] == '\n':
				quit(0, fmt.Sprintf("selected: Item %d", sel+1))
			case pend[0] == 'q':
				quit(3, "")
			default:
				pend = pend[1:]
			}
		}
	more:
		draw()
	}
}
