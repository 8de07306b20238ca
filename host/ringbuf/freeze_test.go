package ringbuf

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// exactModel tracks what a Buffer must hold after any sequence of writes,
// stages, commits, discards and compactions: the stream by offset, the
// committed head and the oldest held offset.
type exactModel struct {
	max        int
	stream     []byte // the byte at every offset below end
	head, tail uint64
}

func (m *exactModel) end() uint64 { return uint64(len(m.stream)) }

func (m *exactModel) stage(p []byte) {
	m.stream = append(m.stream, p...)
	if e := m.end(); e > uint64(m.max) {
		m.tail = max(m.tail, e-uint64(m.max))
	}
}

func (m *exactModel) discardTo(end uint64) {
	end = max(end, m.head)
	if end >= m.end() {
		return
	}
	m.stream = m.stream[:end]
	m.tail = min(m.tail, end)
}

func (m *exactModel) compact(keep uint64) {
	if keep > m.tail {
		m.tail = min(keep, m.end())
	}
}

func (m *exactModel) read(from, to uint64, limit int) (p []byte, next, evicted uint64) {
	if from < m.tail {
		evicted = m.tail - from
		from = m.tail
	}
	if from >= to {
		return nil, to, evicted
	}
	n := to - from
	if limit > 0 && n > uint64(limit) {
		n = uint64(limit)
	}
	return m.stream[from : from+n], from + n, evicted
}

// TestFreezeMatchesModel: freezing at any point, interleaved with writes,
// stages, commits, discards, compactions and reads, changes nothing a
// caller can see: every answer is the exact model's.
func TestFreezeMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		max := rapid.IntRange(1, 20000).Draw(t, "max")
		b := New(max)
		m := &exactModel{max: max}
		text := rapid.Bool().Draw(t, "text") // compressible bytes, or any
		data := func(label string) []byte {
			n := rapid.IntRange(0, 3*max/2+1).Draw(t, label)
			if !text {
				return rapid.SliceOfN(rapid.Byte(), n, n).Draw(t, label+" bytes")
			}
			seed := rapid.Uint64().Draw(t, label+" seed")
			return terminalText(n, seed)
		}
		steps := rapid.IntRange(1, 80).Draw(t, "steps")
		for range steps {
			switch op := rapid.IntRange(0, 9).Draw(t, "op"); op {
			case 0, 1:
				p := data("write")
				b.Write(p)
				m.stage(p)
				m.head = m.end()
			case 2:
				p := data("stage")
				b.Stage(p)
				m.stage(p)
			case 3:
				from, to := b.Commit()
				if from != m.head || to != m.end() {
					t.Fatalf("Commit = [%d,%d), want [%d,%d)", from, to, m.head, m.end())
				}
				m.head = m.end()
			case 4:
				end := uint64(rapid.IntRange(0, int(m.end())+2).Draw(t, "discard to"))
				b.DiscardTo(end)
				m.discardTo(end)
			case 5:
				keep := uint64(rapid.IntRange(0, int(m.end())+2).Draw(t, "compact keep"))
				b.Compact(keep)
				m.compact(keep)
			case 6, 7, 8:
				was := b.Frozen()
				froze := b.Freeze()
				held := m.end() - m.tail
				if froze != (held > 0 && !was) {
					t.Fatalf("Freeze = %v with %d bytes held, frozen before: %v", froze, held, was)
				}
				if held > 0 && !b.Frozen() {
					t.Fatalf("%d bytes held and not frozen after Freeze", held)
				}
			case 9:
				from := uint64(rapid.IntRange(0, int(m.end())+2).Draw(t, "staged from"))
				got := b.ReadStaged([]byte("x"), from)
				want, _, _ := m.read(from, m.end(), 0)
				if !bytes.Equal(got, append([]byte("x"), want...)) {
					t.Fatalf("ReadStaged(%d) = %d bytes, want %d", from, len(got)-1, len(want))
				}
			}
			if b.Head() != m.head || b.End() != m.end() || b.Tail() != m.tail {
				t.Fatalf("Head/End/Tail = %d/%d/%d, want %d/%d/%d", b.Head(), b.End(), b.Tail(), m.head, m.end(), m.tail)
			}
			wantLen := 0
			if m.head > m.tail {
				wantLen = int(m.head - m.tail)
			}
			if b.Len() != wantLen {
				t.Fatalf("Len = %d, want %d", b.Len(), wantLen)
			}
			if rapid.Bool().Draw(t, "read") {
				from := uint64(rapid.IntRange(0, int(m.end())+2).Draw(t, "from"))
				limit := rapid.IntRange(0, max+1).Draw(t, "limit")
				got, next, evicted := b.Read(from, limit)
				want, wnext, wevicted := m.read(from, m.head, limit)
				if !bytes.Equal(got, want) || next != wnext || evicted != wevicted {
					t.Fatalf("Read(%d,%d) = %d bytes, next %d, evicted %d; want %d, %d, %d",
						from, limit, len(got), next, evicted, len(want), wnext, wevicted)
				}
			}
		}
	})
}

// TestFreezeFreesAndThawKeepsSize: a frozen buffer holds only compressed
// bytes; what thaws it gets the storage size it had, so the growth that
// follows is the same.
func TestFreezeFreesAndThawKeepsSize(t *testing.T) {
	b := New(1 << 20)
	b.Write(terminalText(810<<10, 1))
	size := b.Cap()
	if !b.Freeze() {
		t.Fatal("Freeze did nothing")
	}
	if b.buf != nil || b.Cap() >= size/3 {
		t.Fatalf("frozen: storage %d bytes, compressed %d of %d", len(b.buf), b.Cap(), size)
	}
	if b.Freeze() {
		t.Fatal("a frozen buffer froze again")
	}
	// Nothing new to read, and the offsets: no thaw.
	if p, _, _ := b.Read(b.Head(), 0); len(p) != 0 || b.Len() != 810<<10 || b.Tail() != 0 || !b.Frozen() {
		t.Fatalf("read at head %d bytes, Len %d, Tail %d, frozen %v", len(p), b.Len(), b.Tail(), b.Frozen())
	}
	// A read inflates what it returns and leaves the buffer frozen.
	if p, _, _ := b.Read(b.Head()-70000, 0); !bytes.Equal(p, terminalText(810<<10, 1)[810<<10-70000:]) || !b.Frozen() {
		t.Fatalf("read of the newest 70000 bytes: %d bytes, frozen %v", len(p), b.Frozen())
	}
	b.Write([]byte("$ "))
	if b.Frozen() || b.Cap() != size {
		t.Fatalf("after a write: frozen %v, storage %d, want %d", b.Frozen(), b.Cap(), size)
	}
	if p, _, _ := b.Read(0, 0); !bytes.Equal(p, append(terminalText(810<<10, 1), "$ "...)) {
		t.Fatal("thawed bytes differ")
	}
}

// TestFreezeConcurrent: freezes racing a writer and readers never lose or
// reorder a byte (every offset's byte is a function of the offset), and
// what readers see stays committed-only. Run with -race.
func TestFreezeConcurrent(t *testing.T) {
	const max, total = 64 << 10, 4 << 20
	at := func(o uint64) byte { return byte(o*31 + o>>11) }
	b := New(max)
	var wg sync.WaitGroup
	done := make(chan struct{})
	var off uint64 // the writer's; read after Wait
	wg.Go(func() {
		defer close(done)
		r := rand.New(rand.NewPCG(1, 2))
		p := make([]byte, 0, 9000)
		for off < total {
			p = p[:r.IntN(9000)]
			for i := range p {
				p[i] = at(off + uint64(i))
			}
			if r.IntN(2) == 0 {
				b.Write(p)
			} else {
				b.Stage(p)
				b.Stage([]byte("dropped"))
				b.DiscardTo(off + uint64(len(p)))
				b.Commit()
			}
			off += uint64(len(p))
		}
	})
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			b.Freeze()
		}
	})
	for range 2 {
		wg.Go(func() {
			var cur uint64
			for {
				select {
				case <-done:
					return
				default:
				}
				p, next, evicted := b.Read(cur, 5000)
				if next != cur+evicted+uint64(len(p)) {
					t.Errorf("Read(%d): %d bytes, evicted %d, next %d", cur, len(p), evicted, next)
					return
				}
				for i, c := range p {
					if o := cur + evicted + uint64(i); c != at(o) {
						t.Errorf("byte at %d = %d, want %d", o, c, at(o))
						return
					}
				}
				cur = next
			}
		})
	}
	wg.Wait()
	p, next, _ := b.Read(0, 0)
	if next != off || len(p) != max || p[len(p)-1] != at(off-1) {
		t.Fatalf("at the end: %d bytes up to %d, want %d up to %d", len(p), next, max, off)
	}
}

// terminalText is n bytes of what a terminal session prints: prompts,
// commands, ls -l and log lines, some coloured, varied by seed.
func terminalText(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	words := strings.Fields("session pump plugin chunk screen buffer ring read write commit stage thaw freeze host vt telnet ssh pty bash make go test build error warning ok done")
	users := []string{"root", "alice", "termhost"}
	var out bytes.Buffer
	for out.Len() < n {
		switch r.IntN(6) {
		case 0:
			fmt.Fprintf(&out, "\x1b[01;32m%s@host\x1b[00m:\x1b[01;34m~/src/%s\x1b[00m$ %s %s\r\n",
				users[r.IntN(3)], words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))])
		case 1, 2:
			fmt.Fprintf(&out, "-rw-r--r-- 1 %-8s %-8s %7d Nov %2d %02d:%02d %s_%s.go\r\n",
				users[r.IntN(3)], users[r.IntN(3)], r.IntN(200000), 1+r.IntN(30), r.IntN(24), r.IntN(60),
				words[r.IntN(len(words))], words[r.IntN(len(words))])
		case 3, 4:
			lvl := []string{"\x1b[32mINFO\x1b[0m", "\x1b[33mWARN\x1b[0m", "\x1b[31mERROR\x1b[0m"}[r.IntN(3)]
			fmt.Fprintf(&out, "2026-11-%02dT%02d:%02d:%02d.%03dZ %s %s %s id=%08x bytes=%d took=%dms\r\n",
				1+r.IntN(30), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000), lvl,
				words[r.IntN(len(words))], words[r.IntN(len(words))], r.Uint32(), r.IntN(1<<20), r.IntN(5000))
		case 5:
			fmt.Fprintf(&out, "%08d\r\n", r.IntN(100000000))
		}
	}
	return out.Bytes()[:n]
}

func BenchmarkFreeze(b *testing.B) {
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"terminal", terminalText(1<<20, 1)},
		{"digits", digits(1 << 20)},
	} {
		b.Run(c.name+"/freeze+thaw", func(b *testing.B) {
			buf := New(1 << 20)
			buf.Write(c.data)
			b.SetBytes(1 << 20)
			var z int
			for b.Loop() {
				if !buf.Freeze() {
					b.Fatal("did not freeze")
				}
				z = buf.Cap()
				buf.Write([]byte("x")) // thaws
			}
			b.ReportMetric(float64(z)/(1<<20), "compressed/raw")
		})
		b.Run(c.name+"/thaw", func(b *testing.B) {
			buf := New(1 << 20)
			buf.Write(c.data)
			b.SetBytes(1 << 20)
			for b.Loop() {
				b.StopTimer()
				buf.Freeze()
				b.StartTimer()
				buf.Write([]byte("x"))
			}
		})
		for _, n := range []int{4 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("%s/read-%dK-frozen", c.name, n>>10), func(b *testing.B) {
				buf := New(1 << 20)
				buf.Write(c.data)
				buf.Freeze()
				for b.Loop() {
					buf.Read(buf.Head()-uint64(n), 0)
				}
				if !buf.Frozen() {
					b.Fatal("a read thawed the buffer")
				}
			})
		}
	}
}

// digits is what BenchmarkPTYSessionMemory has bash print: lines of 80
// zero-padded digits.
func digits(n int) []byte {
	var out bytes.Buffer
	for i := 1; out.Len() < n; i++ {
		fmt.Fprintf(&out, "%080d\r\n", i)
	}
	return out.Bytes()[:n]
}

// TestCompactFrozen: an ended session's buffer may be compacted while
// frozen; it then thaws into storage of exactly what it holds.
func TestCompactFrozen(t *testing.T) {
	b := New(1 << 20)
	b.Write(terminalText(300<<10, 2))
	b.Freeze()
	b.Compact(b.Head() - 100)
	if !b.Frozen() || b.Len() != 100 || b.Tail() != b.Head()-100 {
		t.Fatalf("frozen %v, Len %d, Tail %d", b.Frozen(), b.Len(), b.Tail())
	}
	p, _, ev := b.Read(0, 0)
	if !bytes.Equal(p, terminalText(300<<10, 2)[300<<10-100:]) || ev != 300<<10-100 || !b.Frozen() {
		t.Fatalf("read %d bytes, evicted %d, frozen %v", len(p), ev, b.Frozen())
	}
	b.mu.Lock()
	b.thaw()
	b.mu.Unlock()
	if b.Cap() != 100 {
		t.Fatalf("thawed into %d bytes, want 100", b.Cap())
	}
}
