package proto

import (
	"testing"

	"pgregory.net/rapid"
)

// qModel is an independent transcription of the RFC 1143 tables for one
// option on one side, used both as a reference for Conn and as the peer's
// negotiation engine in the conversation tests.
type qModel struct {
	state string // "NO", "YES", "WANTNO", "WANTYES"
	opp   bool   // queue == OPPOSITE
}

// recv handles the peer enabling (WILL/DO) or disabling (WONT/DONT) the
// option. reply is "" (nothing), "yes" (DO/WILL) or "no" (DONT/WONT).
func (m *qModel) recv(enable, agree bool) (reply string) {
	if m.state == "" {
		m.state = "NO"
	}
	if enable {
		switch {
		case m.state == "NO" && agree:
			m.state = "YES"
			return "yes"
		case m.state == "NO":
			return "no"
		case m.state == "YES":
			return ""
		case m.state == "WANTNO" && !m.opp:
			m.state = "NO"
		case m.state == "WANTNO":
			m.state, m.opp = "YES", false
		case m.state == "WANTYES" && !m.opp:
			m.state = "YES"
		default: // WANTYES OPPOSITE
			m.state, m.opp = "WANTNO", false
			return "no"
		}
		return ""
	}
	switch {
	case m.state == "NO":
	case m.state == "YES":
		m.state = "NO"
		return "no"
	case m.state == "WANTNO" && !m.opp:
		m.state = "NO"
	case m.state == "WANTNO":
		m.state, m.opp = "WANTYES", false
		return "yes"
	default: // WANTYES, either queue
		m.state, m.opp = "NO", false
	}
	return ""
}

// request is the user asking for the option to be enabled or disabled.
func (m *qModel) request(enable bool) (send string) {
	if m.state == "" {
		m.state = "NO"
	}
	switch {
	case enable && m.state == "NO":
		m.state = "WANTYES"
		return "yes"
	case enable && m.state == "WANTNO" && !m.opp:
		m.opp = true
	case enable && m.state == "WANTYES" && m.opp:
		m.opp = false
	case !enable && m.state == "YES":
		m.state = "WANTNO"
		return "no"
	case !enable && m.state == "WANTNO" && m.opp:
		m.opp = false
	case !enable && m.state == "WANTYES" && !m.opp:
		m.opp = true
	}
	return ""
}

func (m *qModel) encode() uint8 {
	v := map[string]uint8{"": qNO, "NO": qNO, "YES": qYES, "WANTNO": qWANTNO, "WANTYES": qWANTYES}[m.state]
	if m.opp {
		v |= qOpposite
	}
	return v
}

// negSends splits recorded sends into negotiation commands and others.
func negSends(sends []recSend) (negs [][3]byte, others []string) {
	for _, s := range sends {
		b := s.B
		if len(b) == 3 && b[0] == IAC && b[1] >= WILL && b[1] <= DONT {
			negs = append(negs, [3]byte{b[0], b[1], b[2]})
		} else {
			others = append(others, b)
		}
	}
	return
}

var qOpts = []byte{BINARY, ECHO, SGA, STATUS, TTYPE, EOROPT, NAWS, LINEMODE, NEWENVIRON, 200}

// TestQMethodStorm drives a Conn with a random storm of peer commands
// (repeats, flip-flops, answers to our own requests) and host requests,
// checking every reply against the RFC 1143 model and the bounds: at most
// one negotiation reply per peer command or request, none for a command
// that confirms a settled state.
func TestQMethodStorm(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := New(Config{})
		var us, him [256]qModel
		peerCmds, requests, replies := 0, 0, 0
		steps := rapid.IntRange(1, 200).Draw(t, "steps")
		for range steps {
			o := rapid.SampledFrom(qOpts).Draw(t, "opt")
			r := &recorder{}
			if rapid.IntRange(0, 4).Draw(t, "who") == 0 {
				local := rapid.Bool().Draw(t, "local")
				enable := rapid.Bool().Draw(t, "enable")
				requests++
				m := &him[o]
				yes, no := DO, DONT
				if local {
					m, yes, no = &us[o], WILL, WONT
				}
				want := m.request(enable)
				c.Request(o, local, enable, r)
				negs, others := negSends(r.sends)
				replies += len(negs)
				switch {
				case want == "" && len(negs) != 0,
					want == "yes" && (len(negs) != 1 || negs[0] != [3]byte{IAC, yes, o}),
					want == "no" && (len(negs) != 1 || negs[0] != [3]byte{IAC, no, o}):
					t.Fatalf("Request(%d,%v,%v): sent %q, model %q", o, local, enable, r.sendStrings(), want)
				}
				if len(others) != 0 {
					t.Fatalf("Request sent %q", others)
				}
			} else {
				v := rapid.SampledFrom([]byte{WILL, WONT, DO, DONT}).Draw(t, "verb")
				peerCmds++
				local := v == DO || v == DONT
				enable := v == WILL || v == DO
				m := &him[o]
				yes, no := DO, DONT
				agree := acceptRemote(o)
				if local {
					m, yes, no, agree = &us[o], WILL, WONT, acceptLocal(o)
				}
				settled := (m.state == "YES" && enable) || ((m.state == "NO" || m.state == "") && !enable)
				before := m.encode()
				want := m.recv(enable, agree)
				c.Receive([]byte{IAC, v, o}, r)
				negs, others := negSends(r.sends)
				replies += len(negs)
				if settled && len(r.sends) != 0 {
					t.Fatalf("replied %q to %s %d confirming state %d", r.sendStrings(), CommandName(v), o, before)
				}
				switch {
				case want == "" && len(negs) != 0,
					want == "yes" && (len(negs) != 1 || negs[0] != [3]byte{IAC, yes, o}),
					want == "no" && (len(negs) != 1 || negs[0] != [3]byte{IAC, no, o}):
					t.Fatalf("%s %d in state %d: sent %q, model %q", CommandName(v), o, before, r.sendStrings(), want)
				}
				// The only other send is the window size when NAWS
				// turns on.
				nawsOn := local && o == NAWS && before != qYES && m.state == "YES"
				if (nawsOn && len(others) != 1) || (!nawsOn && len(others) != 0) {
					t.Fatalf("unexpected sends %q", others)
				}
			}
			for i := range 256 {
				if c.us[i] != us[i].encode() || c.him[i] != him[i].encode() {
					t.Fatalf("option %d: conn us=%d him=%d, model us=%d him=%d", i, c.us[i], c.him[i], us[i].encode(), him[i].encode())
				}
			}
			if len(r.data) != 0 {
				t.Fatalf("data %q", r.data)
			}
		}
		if replies > peerCmds+requests {
			t.Fatalf("%d replies for %d commands and %d requests", replies, peerCmds, requests)
		}
	})
}

// parseNegs extracts IAC verb opt triples from a stream, skipping SBs.
func parseNegs(b []byte) (negs [][2]byte) {
	for i := 0; i+1 < len(b); i++ {
		if b[i] != IAC {
			continue
		}
		switch v := b[i+1]; {
		case v >= WILL && v <= DONT && i+2 < len(b):
			negs = append(negs, [2]byte{v, b[i+2]})
			i += 2
		case v == SB:
			for i += 2; i+1 < len(b) && !(b[i] == IAC && b[i+1] == SE); i++ {
				if b[i] == IAC {
					i++
				}
			}
			i++
		default:
			i++
		}
	}
	return negs
}

// qPeer is an RFC 1143 server-side peer with an arbitrary acceptance
// policy.
type qPeer struct {
	us, him [256]qModel // peer's own side (WILL/WONT) and ours as it sees it
	out     []byte      // bytes on the wire toward the Conn
}

func (p *qPeer) emit(v, o byte) { p.out = append(p.out, IAC, v, o) }

func (p *qPeer) handle(v, o byte, agree bool) {
	switch v {
	case WILL, WONT:
		switch p.him[o].recv(v == WILL, agree) {
		case "yes":
			p.emit(DO, o)
		case "no":
			p.emit(DONT, o)
		}
	case DO, DONT:
		switch p.us[o].recv(v == DO, agree) {
		case "yes":
			p.emit(WILL, o)
		case "no":
			p.emit(WONT, o)
		}
	}
}

func (p *qPeer) request(o byte, peerSide, enable bool) {
	m, yes, no := &p.him[o], DO, DONT
	if peerSide {
		m, yes, no = &p.us[o], WILL, WONT
	}
	switch m.request(enable) {
	case "yes":
		p.emit(yes, o)
	case "no":
		p.emit(no, o)
	}
}

// TestQMethodConversation connects a Conn to an RFC 1143 peer through two
// in-order pipes, with requests from both sides made at random moments
// (so they cross on the wire). The conversation must always go quiet, in
// a bounded number of messages, with both ends agreeing on every option.
func TestQMethodConversation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := New(Config{})
		peer := &qPeer{}
		var toPeer []byte // Conn -> peer wire
		sink := &funcSink{send: func(p []byte) { toPeer = append(toPeer, p...) }}
		requests, messages := 0, 0
		deliverToConn := func() {
			if len(peer.out) == 0 {
				return
			}
			// Deliver a random prefix, possibly cutting a command.
			n := rapid.IntRange(1, len(peer.out)).Draw(t, "n")
			chunk := peer.out[:n]
			peer.out = append([]byte(nil), peer.out[n:]...)
			c.Receive(chunk, sink)
		}
		deliverToPeer := func() {
			for _, ng := range parseNegs(toPeer) {
				messages++
				peer.handle(ng[0], ng[1], rapid.Bool().Draw(t, "agree"))
			}
			toPeer = nil
		}
		for range rapid.IntRange(0, 150).Draw(t, "steps") {
			o := rapid.SampledFrom(qOpts).Draw(t, "opt")
			switch rapid.IntRange(0, 3).Draw(t, "action") {
			case 0:
				requests++
				c.Request(o, rapid.Bool().Draw(t, "local"), rapid.Bool().Draw(t, "enable"), sink)
			case 1:
				requests++
				peer.request(o, rapid.Bool().Draw(t, "peerSide"), rapid.Bool().Draw(t, "enable"))
			case 2:
				deliverToConn()
			case 3:
				deliverToPeer()
			}
		}
		// Drain. Every request costs at most a request, an answer and a
		// queued opposite request with its answer; unsolicited peer
		// requests are answered once.
		limit := 4*requests + 4
		for rounds := 0; len(peer.out) > 0 || len(toPeer) > 0; rounds++ {
			if rounds > limit {
				t.Fatalf("negotiation did not settle after %d rounds", rounds)
			}
			messages += len(parseNegs(peer.out))
			c.Receive(peer.out, sink)
			peer.out = nil
			deliverToPeer()
		}
		if messages > limit {
			t.Fatalf("%d messages for %d requests", messages, requests)
		}
		for o := range 256 {
			if c.Pending(byte(o), true) || c.Pending(byte(o), false) {
				t.Fatalf("option %d still pending at quiescence", o)
			}
			if c.Enabled(byte(o), true) != (peer.him[o].state == "YES") ||
				c.Enabled(byte(o), false) != (peer.us[o].state == "YES") {
				t.Fatalf("option %d: disagreement: conn us=%d him=%d, peer sees us=%q him=%q",
					o, c.us[o], c.him[o], peer.him[o].state, peer.us[o].state)
			}
		}
	})
}

// TestNaiveAckPeerNoLoop: a non-RFC-1143 peer that acknowledges every
// command it receives (the classic RFC 854 loop maker). Our Conn never
// acknowledges an acknowledgement, so with at most one unsolicited command
// per option the conversation ends. When the peer flip-flops (WILL x then
// WONT x before our answer arrives) its acknowledgements of our answers are
// new requests from our point of view and the conversation can go on
// forever, but it is the peer that drives it: we never send more
// negotiation commands than it does (plus our own requests).
func TestNaiveAckPeerNoLoop(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		flipflop := rapid.Bool().Draw(t, "flipflop")
		var opts []byte
		if flipflop {
			opts = rapid.SliceOfN(rapid.SampledFrom(qOpts), 1, 20).Draw(t, "opts")
		} else {
			opts = rapid.SliceOfNDistinct(rapid.SampledFrom(qOpts), 1, len(qOpts), rapid.ID[byte]).Draw(t, "opts")
		}
		c := New(Config{})
		var wire []byte
		sink := &funcSink{send: func(p []byte) { wire = append(wire, p...) }}
		var in []byte
		for _, o := range opts {
			in = append(in, IAC, rapid.SampledFrom([]byte{WILL, WONT, DO, DONT}).Draw(t, "verb"), o)
		}
		ours := rapid.SliceOfN(rapid.SampledFrom(qOpts), 0, 5).Draw(t, "ours")
		for _, o := range ours {
			c.Request(o, rapid.Bool().Draw(t, "local"), rapid.Bool().Draw(t, "enable"), sink)
		}
		peerSent, weSent := 0, 0
		ack := map[byte]byte{WILL: DO, WONT: DONT, DO: WILL, DONT: WONT}
		for round := 0; len(in) > 0 || len(wire) > 0; round++ {
			if round > 50 {
				if !flipflop {
					t.Fatal("loop with a peer that only acknowledges")
				}
				break
			}
			peerSent += len(parseNegs(in))
			c.Receive(in, sink)
			in = nil
			negs := parseNegs(wire)
			wire = nil
			weSent += len(negs)
			if weSent > peerSent+len(ours) {
				t.Fatalf("we sent %d, peer %d (+%d requests)", weSent, peerSent, len(ours))
			}
			for _, ng := range negs {
				in = append(in, IAC, ack[ng[0]], ng[1])
			}
		}
	})
}
