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

// TestStagingMatchesModel: staged bytes are invisible until Commit, Discard
// takes them back, and a reader sees the model's committed stream.
func TestStagingMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		max := rapid.IntRange(1, 5000).Draw(t, "max")
		b := New(max)
		var committed, staged []byte
		total := 0 // every byte ever stored: below max, nothing was evicted
		steps := rapid.IntRange(1, 60).Draw(t, "steps")
		for range steps {
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0, 1:
				p := rapid.SliceOfN(rapid.Byte(), 0, max+10).Draw(t, "stage")
				b.Stage(p)
				staged = append(staged, p...)
				total += len(p)
			case 2:
				from, to := b.Commit()
				if from != uint64(len(committed)) || to != uint64(len(committed)+len(staged)) {
					t.Fatalf("Commit = [%d,%d), want [%d,%d)", from, to, len(committed), len(committed)+len(staged))
				}
				committed, staged = append(committed, staged...), nil
			case 3:
				if len(staged) > 0 && rapid.Bool().Draw(t, "partly") {
					keep := rapid.IntRange(0, len(staged)).Draw(t, "keep")
					b.DiscardTo(uint64(len(committed) + keep))
					staged = staged[:keep]
					break
				}
				b.Discard()
				staged = nil
			case 4:
				p := rapid.SliceOfN(rapid.Byte(), 0, max+10).Draw(t, "write")
				b.Write(p)
				committed, staged = append(append(committed, staged...), p...), nil
				total += len(p)
			}
			all := append(append([]byte(nil), committed...), staged...)
			if b.Head() != uint64(len(committed)) || b.End() != uint64(len(all)) {
				t.Fatalf("Head/End = %d/%d, want %d/%d", b.Head(), b.End(), len(committed), len(all))
			}
			// What the ring holds is the newest max bytes of the whole stream,
			// except that discarded bytes may have evicted committed ones.
			got, next, evicted := b.Read(0, 0)
			if next != uint64(len(committed)) && len(got) > 0 {
				t.Fatalf("Read next = %d, want %d", next, len(committed))
			}
			if int(evicted)+len(got) != len(committed) && len(got) > 0 {
				t.Fatalf("evicted %d + read %d != committed %d", evicted, len(got), len(committed))
			}
			if !bytes.HasSuffix(committed, got) || len(got) > max {
				t.Fatalf("read %d bytes that are not the newest committed ones", len(got))
			}
			st := b.ReadStaged(nil, uint64(len(committed)))
			if !bytes.HasSuffix(staged, st) || (total <= max && !bytes.Equal(st, staged)) {
				t.Fatalf("ReadStaged = %d bytes, staged %d", len(st), len(staged))
			}
		}
	})
}

func TestCompact(t *testing.T) {
	b := New(1 << 20)
	b.Write(bytes.Repeat([]byte("x"), 300<<10))
	b.Write([]byte("tail"))
	b.Compact(b.Head() - 4)
	if b.Cap() != 4 || b.Len() != 4 {
		t.Fatalf("after Compact: cap %d len %d, want 4 and 4", b.Cap(), b.Len())
	}
	if p, _, ev := b.Read(0, 0); string(p) != "tail" || ev != 300<<10 {
		t.Fatalf("read %q evicted %d", p, ev)
	}
	b.Write([]byte("more"))
	if p, _, _ := b.Read(b.Head()-8, 0); string(p) != "tailmore" {
		t.Fatalf("write after Compact: %q", p)
	}
}
