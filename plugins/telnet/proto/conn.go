package proto

import (
	"slices"
)

// Parser states. The numeric values are part of the MarshalState format.
const (
	stData  uint8 = iota // plain data
	stIAC                // after IAC
	stOpt                // after IAC WILL/WONT/DO/DONT, verb in Conn.verb
	stSBOpt              // after IAC SB, waiting for the option byte
	stSB                 // inside a subnegotiation payload
	stSBIAC              // after IAC inside a subnegotiation
	stLast  = stSBIAC
)

// envVar is one configured NEW-ENVIRON variable.
type envVar struct {
	name, value string
	typ         byte // EnvVAR or EnvUSERVAR
}

// envReq is one variable requested in a NEW-ENVIRON SEND, its name being
// Conn.scratch[start:end].
type envReq struct {
	typ        byte
	start, end int
}

// Conn is the protocol state of one telnet client connection. Create it
// with New. It is not safe for concurrent use.
type Conn struct {
	us, him [256]uint8 // RFC 1143 states, see q.go

	state      uint8 // parser state (st*)
	verb       byte  // negotiation verb in state stOpt
	sbOpt      byte  // option of the current subnegotiation
	crPending  bool  // last data byte was a CR; drop a following NUL
	dropNOP    bool  // Config.DropNOP
	sbOverflow bool  // current subnegotiation exceeded MaxSubneg
	sb         []byte
	ttypePos   int // RFC 1091 cycle position, 0..len(terms)

	terms      []string // Term followed by ExtraTerms
	cols, rows uint16
	speed      string
	env        []envVar // sorted by name

	// Scratch buffers, reused.
	dbuf    []byte // unescaped data of the current Receive, see unescape.go
	out     []byte
	scratch []byte
	reqs    []envReq
}

// New returns a Conn with every option disabled, ready to Receive.
func New(cfg Config) *Conn {
	c := &Conn{}
	c.setConfig(cfg)
	return c
}

func (c *Conn) setConfig(cfg Config) {
	term := cfg.Term
	if term == "" {
		term = "xterm-256color"
	}
	c.terms = append([]string{term}, cfg.ExtraTerms...)
	c.cols, c.rows = cfg.Cols, cfg.Rows
	if c.cols == 0 {
		c.cols = 80
	}
	if c.rows == 0 {
		c.rows = 24
	}
	c.dropNOP = cfg.DropNOP
	c.speed = cfg.Speed
	if c.speed == "" {
		c.speed = "38400,38400"
	}
	c.env = c.env[:0]
	for k, v := range cfg.Env {
		if k != "" {
			c.env = append(c.env, envVar{name: k, value: v, typ: envType(k)})
		}
	}
	sortEnv(c.env)
}

func sortEnv(env []envVar) {
	slices.SortFunc(env, func(a, b envVar) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
}

// envType classifies a variable: the well-known variables of RFC 1572 are
// VARs, everything else is a USERVAR.
func envType(name string) byte {
	switch name {
	case "USER", "JOB", "ACCT", "PRINTER", "SYSTEMTYPE", "DISPLAY":
		return EnvVAR
	}
	return EnvUSERVAR
}

// Receive decodes a chunk of bytes received from the peer, reporting data,
// replies and events to s. Any partial command at the end of p is kept for
// the next call.
//
// plain is true when p contained no IAC and needed no CR NUL rewriting, in
// which case p itself was passed to s.Data in exactly one call. An empty p
// returns false and calls nothing.
func (c *Conn) Receive(p []byte, s Sink) (plain bool) {
	c.dbuf = c.dbuf[:0]
	i := 0
	for i < len(p) {
		switch c.state {
		case stData:
			if c.crPending {
				c.crPending = false
				if p[i] == 0 {
					i++
					continue
				}
			}
			i, plain = c.data(p, i, s)
		case stIAC:
			b := p[i]
			i++
			c.command(b, s)
		case stOpt:
			opt := p[i]
			i++
			c.state = stData
			c.negotiate(c.verb, opt, s)
		case stSBOpt:
			c.sbOpt = p[i]
			i++
			c.sb = c.sb[:0]
			c.sbOverflow = false
			c.state = stSB
		case stSB:
			j := indexByte(p[i:], IAC)
			if j < 0 {
				c.sbAppend(p[i:])
				i = len(p)
			} else {
				c.sbAppend(p[i : i+j])
				i += j + 1
				c.state = stSBIAC
			}
		case stSBIAC:
			switch p[i] {
			case SE:
				i++
				c.state = stData
				c.subneg(s)
			case IAC:
				i++
				c.sbAppend(p[i-1 : i])
				c.state = stSB
			default:
				// Protocol error: like libtelnet, finish the
				// subnegotiation and process this byte as the command
				// following an IAC.
				c.state = stIAC
				c.subneg(s)
			}
		default:
			// Unreachable: UnmarshalState validates the state.
			c.state = stData
		}
	}
	return plain
}

// data handles data from p[i] in state stData, up to the next command or
// the end of p. It returns the next index, and whole == true if all of p
// was passed to Data as one call.
//
// Data that needs no rewriting is passed on as sub-slices of p. From the
// first IAC IAC or CR NUL (or, with DropNOP, IAC NOP) on, the rest of the
// chunk's data is copied and unescaped into c.dbuf instead, and the
// commands on the way are handled there (see unescape.go).
func (c *Conn) data(p []byte, i int, s Sink) (next int, whole bool) {
	if len(c.dbuf) > 0 {
		// This chunk's data is being copied already: keep copying, that
		// is cheaper than scanning first.
		return c.unescape(p, i, i, 0, s), false
	}
	nvt := c.him[BINARY] != qYES
	j := indexSpecial(p[i:], nvt)
	if j < 0 {
		c.crPending = nvt && p[len(p)-1] == '\r'
		s.Data(p[i:])
		return len(p), i == 0
	}
	j += i
	switch {
	case p[j] != IAC: // the NUL of a CR NUL
		return c.unescape(p, i, j, 1, s), false
	case j+1 < len(p) && (p[j+1] == IAC || p[j+1] == NOP && c.dropNOP):
		return c.unescape(p, i, j, 0, s), false
	}
	if j > i {
		s.Data(p[i:j])
	}
	c.state = stIAC
	return j + 1, false
}

// command handles the byte after an IAC in data.
func (c *Conn) command(b byte, s Sink) {
	c.state = stData
	switch b {
	case IAC: // the escape was split between two chunks
		c.dbuf = append(c.dbuf, IAC)
		s.Data(c.dbuf[len(c.dbuf)-1:])
	case WILL, WONT, DO, DONT:
		c.verb = b
		c.state = stOpt
	case SB:
		c.state = stSBOpt
	case GA:
		s.Event(Event{Kind: EventPrompt, Prompt: PromptGA})
	case EOR:
		s.Event(Event{Kind: EventPrompt, Prompt: PromptEOR})
	case NOP:
		if !c.dropNOP {
			s.Event(Event{Kind: EventCommand, Command: b})
		}
	default:
		s.Event(Event{Kind: EventCommand, Command: b})
	}
}

func (c *Conn) sbAppend(b []byte) {
	if c.sbOverflow {
		return
	}
	if room := MaxSubneg - len(c.sb); len(b) > room {
		b = b[:room]
		c.sbOverflow = true
	}
	c.sb = append(c.sb, b...)
}

// Encode sends user data to the peer: IAC bytes are doubled and, unless our
// BINARY option is enabled, a CR not followed by LF within p becomes CR NUL
// (so a CR at the very end of p becomes CR NUL too). The result goes to
// s.Send in one call; if nothing needs escaping that call is p itself.
func (c *Conn) Encode(p []byte, s Sink) {
	if len(p) == 0 {
		return
	}
	nvt := c.us[BINARY] != qYES
	if indexByte(p, IAC) < 0 && (!nvt || !hasBareCR(p)) {
		s.Send(p)
		return
	}
	out := c.out[:0]
	for i := 0; i < len(p); i++ {
		b := p[i]
		out = append(out, b)
		switch {
		case b == IAC:
			out = append(out, IAC)
		case b == '\r' && nvt && (i+1 == len(p) || p[i+1] != '\n'):
			out = append(out, 0)
		}
	}
	c.out = out
	s.Send(out)
}

func hasBareCR(p []byte) bool {
	for {
		j := indexByte(p, '\r')
		if j < 0 {
			return false
		}
		if j+1 == len(p) || p[j+1] != '\n' {
			return true
		}
		p = p[j+2:]
	}
}

// SendCommand sends IAC cmd (IP, BRK, AYT, NOP, AO, EC, EL, GA, DM, EOR...)
// as one Send. Commands that need an option or payload (WILL, WONT, DO,
// DONT, SB) and IAC itself are ignored; use Request and Encode instead.
func (c *Conn) SendCommand(cmd byte, s Sink) {
	switch cmd {
	case WILL, WONT, DO, DONT, SB, IAC:
		return
	}
	c.out = append(c.out[:0], IAC, cmd)
	s.Send(c.out)
}

// Resize stores the window size and, if NAWS is enabled on our side, sends
// it to the peer.
func (c *Conn) Resize(cols, rows uint16, s Sink) {
	c.cols, c.rows = cols, rows
	if c.us[NAWS] == qYES {
		c.sendNAWS(s)
	}
}

// Size returns the stored window size.
func (c *Conn) Size() (cols, rows uint16) { return c.cols, c.rows }

func (c *Conn) sendNAWS(s Sink) {
	out := append(c.out[:0], IAC, SB, NAWS)
	out = appendEsc(out, byte(c.cols>>8), byte(c.cols), byte(c.rows>>8), byte(c.rows))
	out = append(out, IAC, SE)
	c.out = out
	s.Send(out)
}

// appendEsc appends bytes with IAC doubled.
func appendEsc(out []byte, b ...byte) []byte {
	for _, x := range b {
		out = append(out, x)
		if x == IAC {
			out = append(out, IAC)
		}
	}
	return out
}

// appendEscString appends s with IAC doubled.
func appendEscString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		out = append(out, s[i])
		if s[i] == IAC {
			out = append(out, IAC)
		}
	}
	return out
}
