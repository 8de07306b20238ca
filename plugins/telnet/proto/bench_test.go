package proto

import (
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
