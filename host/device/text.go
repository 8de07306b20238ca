package device

import (
	"bytes"
	"strings"
	"time"

	"github.com/termhost/termhost/host/ansi"
	"github.com/termhost/termhost/host/session"
)

// The text of a command's output: where its echo ends, the bytes copied
// out of the ring as they come, and the cleaning into what a terminal
// shows.

// echoQuiet: without an echo of the command, how long the stream must be
// quiet before a prompt counts.
const echoQuiet = 500 * time.Millisecond

// echoAnchor finds where the echo of a command line ends in its raw output:
// the end of the line holding the command's last characters.
type echoAnchor struct {
	tail  []byte
	on    bool
	found bool
	end   uint64 // offset just past the echo line's LF
	quiet bool
	// scanned: how much of the collected data was searched in vain.
	scanned int
}

// echoTail is what identifies the echo: the command's last characters
// (a long line may be scrolled by the device's line editor, its start
// replaced by "$").
func echoTail(cmd string) []byte {
	t := strings.TrimSpace(cmd)
	if len(t) > 16 {
		t = t[len(t)-16:]
	}
	return []byte(t)
}

// echoWindow bounds the search: an echo is among the first bytes after
// the command was sent.
const echoWindow = 64 << 10

func (a *echoAnchor) find(c *collector) {
	if !a.on || a.found || len(a.tail) == 0 {
		return
	}
	d := c.data[:min(len(c.data), echoWindow)]
	for i := max(0, a.scanned-echoSlack); i < len(d); i++ {
		if d[i] != a.tail[0] {
			continue
		}
		k := matchSkippingEscapes(d[i:], a.tail)
		if k < 0 {
			continue
		}
		j := bytes.IndexByte(d[i+k:], '\n')
		if j < 0 {
			return // the echo's line is not complete yet
		}
		a.found, a.end = true, c.off+uint64(i+k+j+1)
		return
	}
	a.scanned = len(d)
	if len(c.data) >= echoWindow {
		a.on = false // no echo to be found: every prompt counts
	}
}

// echoSlack: how far back a search resumes, so that an echo cut by the
// end of the data is found whole when the rest comes.
const echoSlack = 512

// matchSkippingEscapes matches want at the start of d, skipping escape
// sequences between its characters (a line editor that colours what is
// typed), and returns the length of d it spans, or -1.
func matchSkippingEscapes(d, want []byte) int {
	j := 0
	for k := 0; k < len(want); {
		if j >= len(d) {
			return -1
		}
		if d[j] == 0x1b && k > 0 {
			n := ansi.SeqLen(d[j:])
			if n <= 0 {
				return -1 // cut: decided when more comes
			}
			j += n
			continue
		}
		if d[j] != want[k] {
			return -1
		}
		j, k = j+1, k+1
	}
	return j
}

// after says whether a prompt at offset counts: after the echo, or
// always when no echo is looked for.
func (a *echoAnchor) after(off uint64) bool {
	return !a.on || len(a.tail) == 0 || a.found && off >= a.end
}

// collector copies a command's raw output out of the session's ring as it
// arrives, up to limit bytes, by byte-range reads from off on: the head of
// the output is what run_command returns, so it must outlive the ring.
type collector struct {
	s     *session.Session
	off   uint64 // offset of data[0]
	data  []byte
	limit int
	full  bool // limit reached, or bytes were evicted before they were copied
}

func (c *collector) pull() {
	if c.full {
		return
	}
	next := c.off + uint64(len(c.data))
	p, start := c.s.ReadRange(next, next+uint64(c.limit-len(c.data)))
	if evicted := start - next; evicted > 0 {
		if len(c.data) > 0 {
			c.full = true // a gap: keep the head
			return
		}
		c.off += evicted
	}
	c.data = append(c.data, p...)
	c.full = len(c.data) >= c.limit
}

// slice returns the collected bytes in [start, end) and how many bytes of
// that range were not collected.
func (c *collector) slice(start, end uint64) ([]byte, uint64) {
	lo := max(start, c.off)
	hi := min(end, c.off+uint64(len(c.data)))
	if hi <= lo {
		return nil, end - start
	}
	return c.data[lo-c.off : hi-c.off], (end - start) - (hi - lo)
}

// clean turns a terminal byte stream into text as a terminal would show
// it line by line: escape sequences removed, CR LF and LF end a line, a
// lone CR returns to the start of the line (what follows overwrites it),
// backspace moves back one column; trailing blanks of each line dropped,
// and a last line left blank (a shell's redraw) dropped.
func clean(p []byte) string {
	p = ansi.Strip(p)
	var b strings.Builder
	b.Grow(len(p))
	var line []byte
	col := 0
	flush := func(nl bool) {
		l := bytes.TrimRight(line, " \t")
		if nl || len(l) > 0 {
			b.Write(l)
		}
		if nl {
			b.WriteByte('\n')
		}
		line, col = line[:0], 0
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch c {
		case '\n':
			flush(true)
		case '\r':
			if i+1 < len(p) && p[i+1] == '\n' {
				continue
			}
			col = 0
		case '\b':
			if col > 0 {
				col--
			}
		case 0, 0x07:
		default:
			if col < len(line) {
				line[col] = c
			} else {
				line = append(line, c)
			}
			col++
		}
	}
	flush(false)
	return b.String()
}

// dropEcho removes the echoed command line at the start of the output.
func dropEcho(out, cmd string) string {
	first, rest, found := strings.Cut(out, "\n")
	if strings.TrimSpace(first) == "" && found {
		// The echo may come after an empty line (a redraw).
		f2, r2, ok := strings.Cut(rest, "\n")
		if ok && strings.HasSuffix(strings.TrimRight(f2, " "), strings.TrimSpace(cmd)) {
			return r2
		}
	}
	if strings.HasSuffix(strings.TrimRight(first, " "), strings.TrimSpace(cmd)) && strings.TrimSpace(cmd) != "" {
		if !found {
			return ""
		}
		return rest
	}
	if strings.TrimSpace(first) == "" && found {
		// No echo of the text, only of the Enter (a peer echoing in its own
		// way, or not at all): that empty line is not output.
		return rest
	}
	return out
}

// dropPrompt removes the prompt the output ends with: the last line when
// it holds the prompt's text (or, without one, when it has no newline
// after it).
func dropPrompt(out, prompt string) string {
	i := strings.LastIndexByte(out, '\n')
	last := out[i+1:]
	if prompt == "" || strings.Contains(last, strings.TrimSpace(prompt)) {
		return out[:i+1]
	}
	return out
}
