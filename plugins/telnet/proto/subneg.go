package proto

// subneg processes the completed subnegotiation c.sbOpt / c.sb.
func (c *Conn) subneg(s Sink) {
	p := c.sb
	if !c.sbOverflow && len(p) > 0 && p[0] == SubSEND && c.us[c.sbOpt] == qYES {
		switch c.sbOpt {
		case TTYPE:
			c.sendTTYPE(s)
			return
		case TSPEED:
			c.sendIS(TSPEED, c.speed, s)
			return
		case NEWENVIRON:
			c.sendEnviron(p[1:], s)
			return
		}
	}
	s.Event(Event{Kind: EventSubneg, Option: c.sbOpt, Payload: p})
}

var defaultTerms = []string{"xterm-256color"}

// sendTTYPE answers TTYPE SEND, cycling through the terminal types as RFC
// 1091 describes: each SEND gets the next name, the last name is sent twice
// to mark the end of the list, and the SEND after that restarts it.
func (c *Conn) sendTTYPE(s Sink) {
	terms := c.terms
	if len(terms) == 0 { // zero Conn, not created by New
		terms = defaultTerms
	}
	n := len(terms)
	pos := min(c.ttypePos, n)
	name := terms[min(pos, n-1)]
	pos++
	if pos > n {
		pos = 0
	}
	c.ttypePos = pos
	c.sendIS(TTYPE, name, s)
}

// sendIS sends IAC SB opt IS value IAC SE.
func (c *Conn) sendIS(opt byte, value string, s Sink) {
	out := append(c.out[:0], IAC, SB, opt, SubIS)
	out = appendEscString(out, value)
	out = append(out, IAC, SE)
	c.out = out
	s.Send(out)
}

// sendEnviron answers NEW-ENVIRON SEND [type [name]]... with the configured
// variables that were asked for (all of them if the list is empty, all of
// one type for a type without a name). Variables that are asked for but not
// configured are not mentioned.
func (c *Conn) sendEnviron(req []byte, s Sink) {
	c.parseEnvRequest(req)
	out := append(c.out[:0], IAC, SB, NEWENVIRON, SubIS)
	for i := range c.env {
		v := &c.env[i]
		if !c.envRequested(v) {
			continue
		}
		out = append(out, v.typ)
		out = appendEnvEsc(out, v.name)
		out = append(out, EnvVALUE)
		out = appendEnvEsc(out, v.value)
	}
	out = append(out, IAC, SE)
	c.out = out
	s.Send(out)
}

// parseEnvRequest splits a SEND list into c.reqs, with unescaped names in
// c.scratch. Bytes before the first type code and VALUE parts are ignored.
func (c *Conn) parseEnvRequest(req []byte) {
	c.reqs = c.reqs[:0]
	c.scratch = c.scratch[:0]
	cur := -1 // index in c.reqs of the name being collected, -1 = none
	esc := false
	for _, b := range req {
		if !esc {
			switch b {
			case EnvESC:
				esc = true
				continue
			case EnvVAR, EnvUSERVAR:
				c.reqs = append(c.reqs, envReq{typ: b, start: len(c.scratch), end: len(c.scratch)})
				cur = len(c.reqs) - 1
				continue
			case EnvVALUE:
				cur = -1
				continue
			}
		}
		esc = false
		if cur >= 0 {
			c.scratch = append(c.scratch, b)
			c.reqs[cur].end = len(c.scratch)
		}
	}
}

func (c *Conn) envRequested(v *envVar) bool {
	if len(c.reqs) == 0 {
		return true
	}
	for _, r := range c.reqs {
		if r.typ != v.typ {
			continue
		}
		if r.start == r.end || string(c.scratch[r.start:r.end]) == v.name {
			return true
		}
	}
	return false
}

// appendEnvEsc appends s escaped per RFC 1572 (ESC before VAR, VALUE, ESC
// and USERVAR) and with IAC doubled.
func appendEnvEsc(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch b {
		case EnvVAR, EnvVALUE, EnvESC, EnvUSERVAR:
			out = append(out, EnvESC, b)
		case IAC:
			out = append(out, IAC, IAC)
		default:
			out = append(out, b)
		}
	}
	return out
}
