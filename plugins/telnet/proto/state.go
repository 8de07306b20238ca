package proto

import (
	"encoding/binary"
	"errors"
)

// Snapshot format, version 1 (all integers unsigned; "uv" = uvarint,
// "str" = uv length + bytes):
//
//	"TNP" 1
//	state verb sbOpt flags(bit0 crPending, bit1 sbOverflow)
//	uv ttypePos
//	cols:u16be rows:u16be
//	uv nTerms, nTerms*str
//	str speed
//	uv nEnv, nEnv*(str name, str value)   names sorted, unique, non-empty
//	str sb                                only inside a subnegotiation
//	uv nOpt, nOpt*(opt us him)            options ascending, not both NO
const snapMagic = "TNP\x01"

var errState = errors.New("proto: invalid state snapshot")

// MarshalState returns a compact snapshot of everything needed to continue
// the connection: the RFC 1143 states of all options on both sides, the
// configuration (terminal types, size, speed, environment), the parser
// state including a partially received command or subnegotiation, and the
// TTYPE cycle position. Restore it with UnmarshalState.
func (c *Conn) MarshalState() []byte {
	inSB := c.state == stSB || c.state == stSBIAC
	var flags byte
	if c.crPending {
		flags |= 1
	}
	sb := c.sb
	if inSB {
		if c.sbOverflow {
			flags |= 2
		}
	} else {
		sb = nil
	}
	b := make([]byte, 0, 64+len(sb))
	b = append(b, snapMagic...)
	b = append(b, c.state, c.verb, c.sbOpt, flags)
	b = binary.AppendUvarint(b, uint64(c.ttypePos))
	b = binary.BigEndian.AppendUint16(b, c.cols)
	b = binary.BigEndian.AppendUint16(b, c.rows)
	b = binary.AppendUvarint(b, uint64(len(c.terms)))
	for _, t := range c.terms {
		b = appendStr(b, t)
	}
	b = appendStr(b, c.speed)
	b = binary.AppendUvarint(b, uint64(len(c.env)))
	for _, v := range c.env {
		b = appendStr(b, v.name)
		b = appendStr(b, v.value)
	}
	b = binary.AppendUvarint(b, uint64(len(sb)))
	b = append(b, sb...)
	n := 0
	for i := range c.us {
		if c.us[i] != 0 || c.him[i] != 0 {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	for i := range c.us {
		if c.us[i] != 0 || c.him[i] != 0 {
			b = append(b, byte(i), c.us[i], c.him[i])
		}
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// snapReader decodes a snapshot; the first error sticks.
type snapReader struct {
	b   []byte
	err error
}

func (r *snapReader) fail() {
	if r.err == nil {
		r.err = errState
	}
}

func (r *snapReader) byte() byte {
	if r.err != nil || len(r.b) < 1 {
		r.fail()
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *snapReader) u16() uint16 {
	if r.err != nil || len(r.b) < 2 {
		r.fail()
		return 0
	}
	v := binary.BigEndian.Uint16(r.b)
	r.b = r.b[2:]
	return v
}

// uv reads a uvarint that must not exceed max.
func (r *snapReader) uv(max int) int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > uint64(max) {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *snapReader) bytes() []byte {
	n := r.uv(len(r.b))
	if r.err != nil || n > len(r.b) {
		r.fail()
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *snapReader) str() string { return string(r.bytes()) }

// UnmarshalState restores a snapshot made by MarshalState, replacing all of
// c's state and configuration but Config.DropNOP, which stays the host's. The restored Conn behaves exactly like the
// one the snapshot was taken from. Invalid input returns an error and
// leaves c unchanged.
func (c *Conn) UnmarshalState(data []byte) error {
	if len(data) < len(snapMagic) || string(data[:len(snapMagic)]) != snapMagic {
		return errors.New("proto: not a state snapshot (bad magic or version)")
	}
	r := &snapReader{b: data[len(snapMagic):]}
	var n Conn
	n.state = r.byte()
	n.verb = r.byte()
	n.sbOpt = r.byte()
	flags := r.byte()
	n.crPending = flags&1 != 0
	n.sbOverflow = flags&2 != 0
	ttypePos := r.uv(len(r.b))
	n.cols = r.u16()
	n.rows = r.u16()
	nTerms := r.uv(len(r.b))
	if r.err == nil {
		n.terms = make([]string, 0, nTerms)
	}
	for i := 0; i < nTerms && r.err == nil; i++ {
		n.terms = append(n.terms, r.str())
	}
	n.speed = r.str()
	nEnv := r.uv(len(r.b) / 2)
	if r.err == nil {
		n.env = make([]envVar, 0, nEnv)
	}
	for i := 0; i < nEnv && r.err == nil; i++ {
		name := r.str()
		value := r.str()
		if name == "" || (i > 0 && name <= n.env[i-1].name) {
			r.fail()
		}
		n.env = append(n.env, envVar{name: name, value: value, typ: envType(name)})
	}
	sb := r.bytes()
	nOpt := r.uv(256)
	prev := -1
	for i := 0; i < nOpt && r.err == nil; i++ {
		opt, us, him := r.byte(), r.byte(), r.byte()
		if int(opt) <= prev || !validQ(us) || !validQ(him) || (us == 0 && him == 0) {
			r.fail()
		}
		prev = int(opt)
		n.us[opt], n.him[opt] = us, him
	}
	if r.err != nil {
		return r.err
	}
	inSB := n.state == stSB || n.state == stSBIAC
	switch {
	case len(r.b) != 0,
		n.state > stLast,
		n.state == stOpt && (n.verb < WILL || n.verb > DONT),
		flags&^3 != 0,
		n.crPending && n.state != stData,
		n.sbOverflow && (!inSB || len(sb) != MaxSubneg),
		len(sb) > MaxSubneg,
		len(sb) > 0 && !inSB,
		ttypePos > max(nTerms, 1):
		return errState
	}
	n.ttypePos = ttypePos
	// Commit, keeping c's scratch buffers.
	c.us, c.him = n.us, n.him
	c.state, c.verb, c.sbOpt = n.state, n.verb, n.sbOpt
	c.crPending, c.sbOverflow = n.crPending, n.sbOverflow
	c.sb = append(c.sb[:0], sb...)
	c.ttypePos = n.ttypePos
	c.terms = n.terms
	c.cols, c.rows = n.cols, n.rows
	c.speed = n.speed
	c.env = n.env
	return nil
}
