package ringbuf

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"
)

// model is the obvious implementation: keep everything, remember the offset.
type model struct {
	all []byte
	max int
}

func (m *model) held() (tail uint64, data []byte) {
	if len(m.all) <= m.max {
		return 0, m.all
	}
	return uint64(len(m.all) - m.max), m.all[len(m.all)-m.max:]
}

func TestMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		max := rapid.IntRange(1, 20000).Draw(t, "max")
		b := New(max)
		m := &model{max: max}
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			p := rapid.SliceOfN(rapid.Byte(), 0, 3*max/2+1).Draw(t, "write")
			b.Write(p)
			m.all = append(m.all, p...)
			tail, data := m.held()
			if b.Len() != len(data) || b.Len() > max {
				t.Fatalf("Len = %d, want %d (max %d)", b.Len(), len(data), max)
			}
			if b.Head() != uint64(len(m.all)) || b.Tail() != tail {
				t.Fatalf("Head/Tail = %d/%d, want %d/%d", b.Head(), b.Tail(), len(m.all), tail)
			}
			from := uint64(rapid.IntRange(0, len(m.all)+2).Draw(t, "from"))
			limit := rapid.IntRange(0, max+1).Draw(t, "limit")
			got, next, evicted := b.Read(from, limit)
			wantFrom := max64(from, tail)
			var want []byte
			if wantFrom < uint64(len(m.all)) {
				want = m.all[wantFrom:]
			}
			if limit > 0 && len(want) > limit {
				want = want[:limit]
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Read(%d,%d) = %d bytes, want %d", from, limit, len(got), len(want))
			}
			if wantFrom < uint64(len(m.all)) && next != wantFrom+uint64(len(want)) {
				t.Fatalf("next = %d, want %d", next, wantFrom+uint64(len(want)))
			}
			if from < tail && evicted != tail-from {
				t.Fatalf("evicted = %d, want %d", evicted, tail-from)
			}
			if from >= tail && evicted != 0 {
				t.Fatalf("evicted = %d, want 0", evicted)
			}
		}
	})
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

func TestIdleBufferIsSmall(t *testing.T) {
	b := New(1 << 20)
	b.Write([]byte("login: "))
	if len(b.buf) > minAlloc {
		t.Fatalf("a 7-byte buffer allocated %d bytes", len(b.buf))
	}
}

func BenchmarkWrite4K(b *testing.B) {
	buf := New(1 << 20)
	p := bytes.Repeat([]byte("x"), 4096)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		buf.Write(p)
	}
}
