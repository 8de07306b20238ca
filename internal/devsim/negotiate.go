package devsim

// The Telnet options of a conn: the RFC 1143 state machine, the opening
// negotiation and the SessionInfo it records.

import (
	"sort"
	"time"
)

// Q method option states (RFC 1143), without the OPPOSITE queue: the
// server never changes its mind while a request is in flight.
type qstate uint8

const (
	qNo qstate = iota
	qYes
	qWantNo
	qWantYes
)

type optState struct {
	us  qstate // our side: WILL/WONT we send, DO/DONT the client sends
	him qstate // client's side: DO/DONT we send, WILL/WONT the client sends
}

// Option negotiation. The methods up to negSettled run with c.mu held (the
// reader goroutine's readSink); the others take it.

func (c *conn) supportLocal(opt byte) bool {
	switch opt {
	case optEcho, optSGA:
		return true
	case optEOR:
		return c.s.cfg.EOR
	}
	return false
}

func (c *conn) supportRemote(opt byte) bool {
	switch opt {
	case optTTYPE, optNAWS, optNewEnviron, optSGA:
		return true
	}
	return false
}

func (c *conn) sendNeg(verb, opt byte) {
	c.info.NegSent++
	c.reply = append(c.reply, cmdIAC, verb, opt)
}

func (c *conn) askWill(opt byte) {
	if st := &c.opts[opt]; st.us == qNo {
		st.us = qWantYes
		c.sendNeg(cmdWILL, opt)
	}
}

func (c *conn) askDo(opt byte) {
	if st := &c.opts[opt]; st.him == qNo {
		st.him = qWantYes
		c.sendNeg(cmdDO, opt)
	}
}

func (c *conn) recvNeg(verb, opt byte) {
	c.info.NegReceived++
	st := &c.opts[opt]
	switch verb {
	case cmdDO:
		if opt == optTimingMark {
			// TIMING-MARK is a request, not a state: always answer it.
			c.sendNeg(cmdWILL, optTimingMark)
			return
		}
		switch st.us {
		case qNo:
			if c.supportLocal(opt) {
				st.us = qYes
				c.sendNeg(cmdWILL, opt)
			} else {
				c.sendNeg(cmdWONT, opt)
			}
		case qWantNo:
			st.us = qNo // DONT answered by DO; we do not insist
		case qWantYes:
			st.us = qYes
		}
	case cmdDONT:
		switch st.us {
		case qYes:
			st.us = qNo
			c.sendNeg(cmdWONT, opt)
		case qWantNo, qWantYes:
			st.us = qNo
		}
	case cmdWILL:
		switch st.him {
		case qNo:
			if c.supportRemote(opt) {
				st.him = qYes
				c.sendNeg(cmdDO, opt)
				c.remoteEnabled(opt)
			} else {
				c.sendNeg(cmdDONT, opt)
			}
		case qWantNo:
			st.him = qNo
		case qWantYes:
			st.him = qYes
			c.remoteEnabled(opt)
		}
	case cmdWONT:
		switch st.him {
		case qYes:
			st.him = qNo
			c.sendNeg(cmdDONT, opt)
		case qWantNo, qWantYes:
			st.him = qNo
		}
		if opt == optTTYPE {
			c.ttypeWait = false
		}
		if opt == optNewEnviron {
			c.envWait = false
		}
	}
}

func (c *conn) remoteEnabled(opt byte) {
	switch opt {
	case optTTYPE:
		c.ttypeWait = true
		c.reply = append(c.reply, cmdIAC, cmdSB, optTTYPE, sbSEND, cmdIAC, cmdSE)
	case optNewEnviron:
		c.envWait = true
		c.reply = append(c.reply, cmdIAC, cmdSB, optNewEnviron, sbSEND, cmdIAC, cmdSE)
	}
}

// negSettled reports whether the opening negotiation is over: nothing we
// asked for is unanswered and the subnegotiations we asked for came back.
func (c *conn) negSettled() bool {
	for _, o := range []byte{optEcho, optSGA, optEOR} {
		if c.opts[o].us == qWantYes {
			return false
		}
	}
	for _, o := range []byte{optTTYPE, optNAWS, optNewEnviron} {
		if c.opts[o].him == qWantYes {
			return false
		}
	}
	if c.opts[optNAWS].him == qYes && !c.nawsSeen {
		return false
	}
	return !c.ttypeWait && !c.envWait
}

func (c *conn) waitNegotiation() {
	t := time.NewTimer(c.s.cfg.NegotiationTimeout)
	defer t.Stop()
	for {
		c.mu.Lock()
		ok := c.negSettled()
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-c.negNotify:
		case <-t.C:
			return
		case <-c.readerDone:
			return
		}
	}
}

func (c *conn) localOn(opt byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opts[opt].us == qYes
}

// promptMark returns the bytes that follow every prompt: IAC EOR when the
// client agreed to EOR, IAC GA when it did not agree to SGA.
func (c *conn) promptMark() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var m []byte
	if c.opts[optEOR].us == qYes {
		m = append(m, cmdIAC, cmdEOR)
	}
	if c.opts[optSGA].us != qYes {
		m = append(m, cmdIAC, cmdGA)
	}
	return m
}

func (c *conn) snapshot() SessionInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	si := c.info
	if c.info.Env != nil {
		si.Env = make(map[string]string, len(c.info.Env))
		for k, v := range c.info.Env {
			si.Env[k] = v
		}
	}
	si.Local, si.Remote = nil, nil
	for i := range c.opts {
		if c.opts[i].us == qYes {
			si.Local = append(si.Local, OptionName(byte(i)))
		}
		if c.opts[i].him == qYes {
			si.Remote = append(si.Remote, OptionName(byte(i)))
		}
	}
	sort.Strings(si.Local)
	sort.Strings(si.Remote)
	return si
}
