package proto

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

type nopSink struct{ n int }

func (s *nopSink) Data(p []byte) { s.n += len(p) }
func (s *nopSink) Send(p []byte) {}
func (s *nopSink) Event(Event)   {}

// plainText returns n bytes of printable ASCII in CR LF terminated lines of
// 20..100 characters, as a telnet server sends them.
func plainText(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 0, n)
	for len(b) < n {
		line := 20 + rng.IntN(80)
		for range line {
			b = append(b, byte(' '+rng.IntN(95)))
		}
		b = append(b, '\r', '\n')
	}
	return b[:n]
}

func BenchmarkReceivePlain(b *testing.B) {
	chunk := plainText(64 << 10)
	chunk[len(chunk)-1] = '\n' // no CR straddling chunks
	chunk[len(chunk)-2] = '\r'
	c := New(Config{})
	s := &nopSink{}
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		if !c.Receive(chunk, s) {
			b.Fatal("not plain")
		}
	}
}

// iacDense returns data where about a quarter of the bytes belong to
// IAC IAC escapes, negotiation commands or GA.
func iacDense(n int) []byte {
	rng := rand.New(rand.NewPCG(3, 4))
	opts := []byte{ECHO, SGA, BINARY, NAWS, TTYPE, STATUS, 200}
	b := make([]byte, 0, n+8)
	for len(b) < n {
		switch r := rng.IntN(24); {
		case r == 0:
			b = append(b, IAC, IAC)
		case r == 1:
			b = append(b, IAC, WILL+byte(rng.IntN(4)), opts[rng.IntN(len(opts))])
		case r == 2:
			b = append(b, IAC, GA)
		default:
			b = append(b, byte('a'+rng.IntN(26)))
		}
	}
	return b
}

func BenchmarkReceiveIACDense(b *testing.B) {
	chunk := iacDense(64 << 10)
	c := New(Config{})
	s := &nopSink{}
	c.Receive(chunk, s)
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		c.Receive(chunk, s)
	}
}

// iacAll is n bytes of 0xFF: n/2 escaped 0xFF data bytes, the worst case
// for an unescaper that pays per IAC.
func iacAll(n int) []byte { return bytes.Repeat([]byte{IAC}, n) }

// iacMix returns binary data as a server in NVT mode sends it: random
// bytes of which 15% are 0xFF (sent as IAC IAC, so about a quarter of the
// wire bytes are IACs), bare CRs stuffed with NUL, and now and then a GA,
// a NOP or a negotiation command that confirms a state already reached
// (IAC WILL ECHO, IAC DO NAWS). It ends on a data byte so that the same
// chunk can be fed again and again.
func iacMix(n int) []byte {
	rng := rand.New(rand.NewPCG(5, 6))
	b := make([]byte, 0, n+8)
	for len(b) < n-8 {
		switch r := rng.IntN(1000); {
		case r < 150:
			b = append(b, IAC, IAC)
		case r < 153:
			b = append(b, IAC, GA)
		case r < 155:
			b = append(b, IAC, NOP)
		case r < 156:
			b = append(b, IAC, WILL, ECHO)
		case r < 157:
			b = append(b, IAC, DO, NAWS)
		default:
			x := byte(rng.IntN(255))
			b = append(b, x)
			if x == '\r' {
				b = append(b, 0)
			}
		}
	}
	return append(b, 'x')
}

func BenchmarkReceiveIACAll(b *testing.B) {
	benchReceive(b, iacAll(64<<10))
}

func BenchmarkReceiveIACMix(b *testing.B) {
	benchReceive(b, iacMix(64<<10))
}

func benchReceive(b *testing.B, chunk []byte) {
	c := New(Config{})
	s := &nopSink{}
	c.Receive(chunk, s) // settle negotiation
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		c.Receive(chunk, s)
	}
}

func BenchmarkEncodePlain(b *testing.B) {
	chunk := plainText(4 << 10)
	c := New(Config{})
	s := &nopSink{}
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		c.Encode(chunk, s)
	}
}
