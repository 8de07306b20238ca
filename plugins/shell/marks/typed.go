package marks

// Typed follows the lines typed at a shell that marks its prompts but not
// where a command starts (termhost's POSIX sh: S, A and B only), to tell
// at a prompt whether a command ran since the one before: the line the
// shell read there held text. The prompt's $? is that command's status
// only then; after an empty line, or when no line was read (a prompt
// drawn again: Ctrl-C, a resize, a completion list), it is an older one.
//
// Typed sees the bytes written toward the shell and never keeps them: of
// the unfinished line it keeps the number of characters and which of the
// first maxLine are blank. It is sure of a line typed with printable
// characters, space, DEL (erase), Ctrl-U (erase the line), Ctrl-W (erase
// a word) and Enter (CR or LF; each is one line, as the terminal makes
// CR LF two). Ctrl-C drops the unfinished line (the shell drops it). A
// line edited any other way (cursor and history keys, Tab completion,
// Ctrl-H, which dash takes as a character and BusyBox as an erase, any
// other control key) is Unknown: its prompt says no status. Answers to
// the terminal's queries written on the program's behalf (a cursor
// position report, device attributes, OSC and DCS strings) are not typing
// and are skipped, as are bracketed paste's brackets.
//
// Lines typed before the prompt that reads them wait in order (typed
// ahead; those typed before the first prompt are read after it). At a
// prompt, Prompt takes the oldest: an empty line was read and ran nothing,
// so the rest still wait; a line with text ran a command, which may have
// read the lines typed after it as its own input (a `read`, a REPL, a
// password): they are let go. Were they command lines typed ahead instead,
// the prompts they bring find no line and say no status; a line typed
// while those prompts are still to come could be taken for theirs, a race
// only input typed ahead of its prompt runs.
type Typed struct {
	queue []Line

	// The unfinished line.
	n        int                  // characters typed
	filled   [maxLine / 64]uint64 // bit i: character i (of the first maxLine) is not blank
	nonblank int                  // set bits
	unknown  bool                 // edited in a way not followed

	// An escape sequence in progress.
	esc  escState
	seq  int  // its bytes so far
	priv byte // a CSI's private marker (<, =, >, ?), 0 if none
	num  int  // a CSI's first parameter
	nums int  // parameters started
}

// LineKind is what a typed line was.
type LineKind uint8

const (
	Blank   LineKind = iota + 1 // nothing but blanks: the shell runs nothing
	Text                        // a command line
	Unknown                     // edited in a way not followed
)

// Line is one line typed (ended with Enter).
type Line struct {
	Kind LineKind
	At   int64 // the caller's clock when Enter was typed
}

// MaxQueued bounds the lines kept waiting for a prompt; more merge into
// the last as Unknown.
const MaxQueued = 64

// maxLine is how many characters of a line Typed follows one by one.
const maxLine = 1024

// maxSeq bounds an escape sequence's parameters; a longer one is not a
// key or an answer Typed knows.
const maxSeq = 64

type escState uint8

const (
	ground escState = iota
	escape          // after ESC
	csi             // ESC [
	ss3             // ESC O
	str             // OSC, DCS, APC, PM, SOS: until BEL or ESC \
	strEsc          // ESC inside a string
)

// Feed takes bytes written toward the shell. now gives the time a line is
// ended at (called once per Enter).
func (t *Typed) Feed(p []byte, now func() int64) {
	for _, c := range p {
		t.feed(c, now)
	}
}

func (t *Typed) feed(c byte, now func() int64) {
	switch t.esc {
	case escape:
		t.seq, t.priv, t.num, t.nums = 0, 0, 0, 0
		switch c {
		case '[':
			t.esc = csi
		case ']', 'P', '_', '^', 'X':
			t.esc = str
		case 'O':
			t.esc = ss3
		case 0x1b:
			t.unknown = true // ESC ESC: Alt with an escape key
		default:
			t.unknown, t.esc = true, ground // Escape, or Alt with a key
			if c < 0x20 {
				t.feed(c, now) // Escape, then Enter (or another control key)
			}
		}
		return
	case csi:
		t.csiByte(c, now)
		return
	case ss3:
		t.unknown, t.esc = true, ground // F1-F4, keys in application mode
		return
	case str:
		switch c {
		case 0x07:
			t.esc = ground
		case 0x1b:
			t.esc = strEsc
		case '\r', '\n':
			// No answer holds a line end: this was typed.
			t.unknown, t.esc = true, ground
			t.feed(c, now)
		}
		return
	case strEsc:
		if c == '\\' {
			t.esc = ground
			return
		}
		t.esc = escape // ESC ended the string and starts a sequence
		t.feed(c, now)
		return
	}
	switch {
	case c == '\r' || c == '\n':
		t.enter(now())
	case c == 0x1b:
		t.esc = escape
	case c == 0x7f:
		t.erase()
	case c == 0x15, c == 0x03: // Ctrl-U, Ctrl-C
		t.clear()
	case c == 0x17: // Ctrl-W
		t.eraseWord()
	case c < 0x20:
		t.unknown = true
	case c == ' ':
		t.push(false)
	case c >= 0x80 && c < 0xc0:
		// A UTF-8 continuation byte: part of the character before.
	default:
		t.push(true)
	}
}

// csiByte takes one byte of a CSI sequence.
func (t *Typed) csiByte(c byte, now func() int64) {
	switch {
	case c >= 0x40 && c <= 0x7e:
		t.esc = ground
		if !t.answer(c) {
			t.unknown = true
		}
	case c >= 0x20 && c <= 0x3f:
		t.seq++
		switch {
		case t.seq > maxSeq:
			t.unknown, t.esc = true, ground
		case t.seq == 1 && (c == '<' || c == '=' || c == '>' || c == '?'):
			t.priv = c
		case c >= '0' && c <= '9':
			if t.nums == 0 {
				t.nums = 1
			}
			if t.nums == 1 && t.num < 1<<16 {
				t.num = t.num*10 + int(c-'0')
			}
		case c == ';' || c == ':':
			t.nums++
		}
	default:
		// A control byte cuts the sequence: not one Typed knows. The
		// byte itself counts (ESC starts another sequence).
		t.unknown, t.esc = true, ground
		t.feed(c, now)
	}
}

// answer says whether a CSI sequence ending in final is no key: an answer
// to a query (cursor position, status, device attributes, modes, window
// reports), a focus or mouse report, or bracketed paste's brackets.
func (t *Typed) answer(final byte) bool {
	switch final {
	case 'R', 'n', 'c', 'y', 't', 'x':
		return true
	case 'I', 'O':
		return t.nums == 0 // focus in, out
	case 'M', 'm':
		return t.priv == '<' // SGR mouse
	case 'u':
		return t.priv == '?' // keyboard protocol flags
	case '~':
		return t.nums == 1 && (t.num == 200 || t.num == 201)
	}
	return false
}

func (t *Typed) push(filled bool) {
	if t.n < maxLine && filled {
		t.filled[t.n/64] |= 1 << (t.n % 64)
		t.nonblank++
	}
	t.n++
}

// pop erases the last character; it reports whether it was blank, and
// ok false when there was none or its blankness is not known (past
// maxLine).
func (t *Typed) pop() (blank, ok bool) {
	if t.n == 0 {
		return false, false
	}
	t.n--
	if t.n >= maxLine {
		return false, false
	}
	bit := uint64(1) << (t.n % 64)
	if t.filled[t.n/64]&bit != 0 {
		t.filled[t.n/64] &^= bit
		t.nonblank--
		return false, true
	}
	return true, true
}

func (t *Typed) erase() { t.pop() }

// eraseWord erases the blanks before the end, then the word before them.
func (t *Typed) eraseWord() {
	for t.n > 0 {
		if t.n > maxLine {
			t.unknown = true // where the word starts is not known
			return
		}
		if !t.lastBlank() {
			break
		}
		t.pop()
	}
	for t.n > 0 && !t.lastBlank() {
		t.pop()
	}
}

func (t *Typed) lastBlank() bool {
	i := t.n - 1
	return t.filled[i/64]&(1<<(i%64)) == 0
}

// clear drops the unfinished line.
func (t *Typed) clear() {
	t.n, t.nonblank, t.unknown = 0, 0, false
	t.filled = [maxLine / 64]uint64{}
}

// enter ends the unfinished line.
func (t *Typed) enter(now int64) {
	l := Line{Kind: Blank, At: now}
	switch {
	case t.unknown:
		l.Kind = Unknown
	case t.nonblank > 0:
		l.Kind = Text
	case t.n > maxLine:
		l.Kind = Unknown // characters past maxLine were not followed
	}
	t.clear()
	if len(t.queue) >= MaxQueued {
		t.queue[len(t.queue)-1].Kind = Unknown
		return
	}
	t.queue = append(t.queue, l)
}

// Prompt is called when the shell draws a prompt (not its first): it
// returns the line the shell read at the prompt before, and false when it
// read none.
func (t *Typed) Prompt() (Line, bool) {
	if len(t.queue) == 0 {
		return Line{}, false
	}
	l := t.queue[0]
	if l.Kind == Blank {
		n := copy(t.queue, t.queue[1:])
		t.queue = t.queue[:n]
	} else {
		t.queue = t.queue[:0]
	}
	return l, true
}

// Queued reports how many typed lines wait for a prompt.
func (t *Typed) Queued() int { return len(t.queue) }

// Last is the line typed last, waiting for its prompt (ok false: none).
func (t *Typed) Last() (l Line, ok bool) {
	if len(t.queue) == 0 {
		return Line{}, false
	}
	return t.queue[len(t.queue)-1], true
}
