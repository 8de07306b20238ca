package proto

// RFC 1143 option states, one byte per option and side: the low two bits
// are the state, qOpposite is the queue bit (only meaningful in the WANT
// states). The values are part of the MarshalState format.
const (
	qNO       uint8 = 0
	qYES      uint8 = 1
	qWANTNO   uint8 = 2
	qWANTYES  uint8 = 3
	qOpposite uint8 = 4
)

// validQ reports whether v is a valid state byte.
func validQ(v uint8) bool {
	return v <= qWANTYES || v == qWANTNO|qOpposite || v == qWANTYES|qOpposite
}

// acceptRemote is the policy for the peer enabling an option on its side
// (peer WILL -> we DO).
func acceptRemote(opt byte) bool {
	switch opt {
	case ECHO, SGA, BINARY, EOROPT:
		return true
	}
	return false
}

// acceptLocal is the policy for enabling an option on our side (peer DO ->
// we WILL).
func acceptLocal(opt byte) bool {
	switch opt {
	case TTYPE, NAWS, TSPEED, NEWENVIRON, BINARY, SGA:
		return true
	}
	return false
}

func (c *Conn) side(local bool) *[256]uint8 {
	if local {
		return &c.us
	}
	return &c.him
}

// verbs returns the verbs we send to enable / disable an option on a side.
func verbs(local bool) (yes, no byte) {
	if local {
		return WILL, WONT
	}
	return DO, DONT
}

// Enabled reports whether opt is enabled (RFC 1143 state YES) on our side
// (local) or the peer's side.
func (c *Conn) Enabled(opt byte, local bool) bool {
	return c.side(local)[opt] == qYES
}

// Pending reports whether a request of ours about opt on that side is still
// waiting for the peer's answer (RFC 1143 states WANTNO and WANTYES).
func (c *Conn) Pending(opt byte, local bool) bool {
	return c.side(local)[opt]&3 >= qWANTNO
}

func (c *Conn) negotiate(verb, opt byte, s Sink) {
	switch verb {
	case WILL:
		c.recvEnable(false, opt, s)
	case WONT:
		c.recvDisable(false, opt, s)
	case DO:
		c.recvEnable(true, opt, s)
	case DONT:
		c.recvDisable(true, opt, s)
	}
}

// recvEnable handles WILL (remote) or DO (local) per RFC 1143.
func (c *Conn) recvEnable(local bool, opt byte, s Sink) {
	q := c.side(local)
	yes, no := verbs(local)
	old := q[opt]
	switch old {
	case qNO:
		accept := acceptRemote(opt)
		if local {
			accept = acceptLocal(opt)
		}
		if accept {
			q[opt] = qYES
			c.sendNeg(yes, opt, s)
		} else {
			c.sendNeg(no, opt, s)
		}
	case qYES:
		// Already enabled: ignore.
	case qWANTNO:
		// Error: DONT answered by WILL (or WONT by DO).
		q[opt] = qNO
	case qWANTNO | qOpposite:
		// Error, but it is what we queued anyway.
		q[opt] = qYES
	case qWANTYES:
		q[opt] = qYES
	case qWANTYES | qOpposite:
		q[opt] = qWANTNO
		c.sendNeg(no, opt, s)
	default:
		q[opt] = qNO
	}
	c.changed(local, opt, old, s)
}

// recvDisable handles WONT (remote) or DONT (local) per RFC 1143.
func (c *Conn) recvDisable(local bool, opt byte, s Sink) {
	q := c.side(local)
	yes, no := verbs(local)
	old := q[opt]
	switch old {
	case qNO:
		// Already disabled: ignore.
	case qYES:
		q[opt] = qNO
		c.sendNeg(no, opt, s)
	case qWANTNO:
		q[opt] = qNO
	case qWANTNO | qOpposite:
		q[opt] = qWANTYES
		c.sendNeg(yes, opt, s)
	case qWANTYES, qWANTYES | qOpposite:
		q[opt] = qNO
	default:
		q[opt] = qNO
	}
	c.changed(local, opt, old, s)
}

// Request asks for opt to be enabled or disabled on our side (local: we
// send WILL/WONT) or the peer's side (we send DO/DONT), following RFC 1143:
// nothing is sent if the option is already in (or already heading to) the
// requested state, and a request made while the opposite one is in flight
// is queued. Request does not apply the acceptance policy: the host may ask
// for any option.
func (c *Conn) Request(opt byte, local bool, enable bool, s Sink) {
	q := c.side(local)
	yes, no := verbs(local)
	old := q[opt]
	if enable {
		switch old {
		case qNO:
			q[opt] = qWANTYES
			c.sendNeg(yes, opt, s)
		case qWANTNO:
			q[opt] = qWANTNO | qOpposite
		case qWANTYES | qOpposite:
			q[opt] = qWANTYES
		}
	} else {
		switch old {
		case qYES:
			q[opt] = qWANTNO
			c.sendNeg(no, opt, s)
		case qWANTNO | qOpposite:
			q[opt] = qWANTNO
		case qWANTYES:
			q[opt] = qWANTYES | qOpposite
		}
	}
	c.changed(local, opt, old, s)
}

func (c *Conn) sendNeg(verb, opt byte, s Sink) {
	c.out = append(c.out[:0], IAC, verb, opt)
	s.Send(c.out)
}

// changed runs the side effects of a state change and reports it. Side
// effects come first so that a Sink reacting to the event sees a settled
// Conn.
func (c *Conn) changed(local bool, opt byte, old uint8, s Sink) {
	on := c.side(local)[opt] == qYES
	if (old == qYES) == on {
		return
	}
	if local {
		switch opt {
		case NAWS:
			if on {
				c.sendNAWS(s)
			}
		case TTYPE:
			c.ttypePos = 0
		}
	}
	s.Event(Event{Kind: EventOption, Option: opt, Local: local, Enabled: on})
}
