// Package ringbuf is a session's raw output buffer: a bounded byte ring with
// FIFO eviction of the oldest bytes, addressed by absolute stream offsets so
// that any number of readers can keep their own cursor.
//
// Offsets count every byte ever written; the ring holds [Tail, Head). A
// reader that asks for bytes below Tail learns how many were evicted before
// it could read them. Memory grows with use, up to the maximum, so an idle
// session costs little.
//
// Writes can be staged: Stage appends bytes that readers do not see until
// Commit (or that Discard takes back). A session stages what one received
// chunk produced while its plugins run, so a plugin's output is copied from
// the plugin's memory straight into the ring, and readers see a chunk's
// bytes and its events together or not at all.
//
// An idle buffer can be frozen: its bytes are kept deflated, in chunks
// compressed independently, and the storage is freed (terminal output
// compresses several times over). Reads of a frozen buffer inflate only the
// chunks they need and leave it frozen; the next write thaws it (inflates
// at most the buffer's maximum back into storage of the size it had).
// Offsets, eviction and everything a reader sees are the same either way;
// Head, Tail, End, Len, Commit and DiscardTo never inflate anything.
package ringbuf

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
)

const minAlloc = 4 << 10

// Buffer is safe for concurrent use.
type Buffer struct {
	mu   sync.Mutex
	max  int
	buf  []byte // circular storage, len(buf) <= max; offset o lives at o % len(buf)
	head uint64 // committed: one past the newest byte readers may see
	end  uint64 // one past the newest byte stored (staged bytes are [head, end))
	n    int    // bytes stored, committed or staged: [end-n, end)

	// Frozen (buf == nil): the bytes [zFrom, zFrom+zLen), which cover
	// [end-n, end) (DiscardTo and Compact may narrow the stored range while
	// frozen), deflated chunk by chunk: chunk i holds frozenChunk bytes from
	// zFrom+i*frozenChunk and is z[zEnds[i-1]:zEnds[i]]. zCap is the
	// storage size to thaw into.
	z     []byte
	zEnds []int
	zFrom uint64
	zLen  int
	zCap  int
	gen   uint64 // bumped whenever the stored bytes change (Freeze's check)
}

// New returns a buffer that holds at most max bytes (max > 0).
func New(max int) *Buffer {
	if max <= 0 {
		panic("ringbuf: max must be positive")
	}
	return &Buffer{max: max}
}

// Max is the capacity.
func (b *Buffer) Max() int { return b.max }

// Write appends p and makes it visible at once, evicting the oldest bytes
// beyond the maximum. It never blocks and never fails. Bytes staged before
// are committed with it.
func (b *Buffer) Write(p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stage(p)
	b.head = b.end
}

// Stage appends p without making it visible: readers see it after Commit.
// Staging evicts like Write does.
func (b *Buffer) Stage(p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stage(p)
}

// Commit makes every staged byte visible and returns the committed range
// it added.
func (b *Buffer) Commit() (from, to uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	from = b.head
	b.head = b.end
	return from, b.head
}

// Discard drops the staged bytes. Committed bytes they evicted stay gone.
func (b *Buffer) Discard() { b.DiscardTo(0) }

// DiscardTo drops the staged bytes at or after offset end (an End() taken
// earlier; never below the committed head).
func (b *Buffer) DiscardTo(end uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	end = max(end, b.head)
	if end >= b.end {
		return
	}
	drop := int(b.end - end)
	b.end = end
	b.n = max(b.n-drop, 0)
	b.gen++
}

// End is the offset one past the newest byte, staged or not.
func (b *Buffer) End() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.end
}

func (b *Buffer) stage(p []byte) {
	if len(p) == 0 {
		return
	}
	b.gen++
	if len(p) >= b.max {
		b.z, b.zEnds = nil, nil // every stored byte is replaced: nothing to thaw
		b.end += uint64(len(p))
		if len(b.buf) != b.max {
			b.buf = make([]byte, b.max)
		}
		// The newest max bytes, stored at their offset-derived positions.
		tail := b.end - uint64(b.max)
		start := int(tail % uint64(b.max))
		k := copy(b.buf[start:], p[len(p)-b.max:])
		copy(b.buf, p[len(p)-b.max+k:])
		b.n = b.max
		return
	}
	b.thaw()
	if need := b.n + len(p); need > len(b.buf) && len(b.buf) < b.max {
		b.grow(need)
	}
	start := int(b.end % uint64(len(b.buf)))
	b.end += uint64(len(p))
	k := copy(b.buf[start:], p)
	copy(b.buf, p[k:])
	b.n = min(b.n+len(p), len(b.buf))
}

// grow resizes storage to hold at least need bytes (capped at max), keeping
// the stored bytes at their offset-derived positions.
func (b *Buffer) grow(need int) {
	size := max(len(b.buf), minAlloc)
	for size < need && size < doubleUpTo {
		size *= 2
	}
	if size < need {
		// Past doubleUpTo, grow to what is needed in growStep steps: a
		// session's buffer costs what it holds (820 KB of output took a
		// whole 1 MiB when it doubled), at the price of a few more copies
		// on the way to the maximum.
		size = (need + growStep - 1) / growStep * growStep
	}
	b.resize(min(size, b.max))
}

// Growth: doubling up to doubleUpTo, then growStep at a time.
const (
	doubleUpTo = 256 << 10
	growStep   = 64 << 10
)

// resize moves the stored bytes to storage of size bytes (>= b.n).
func (b *Buffer) resize(size int) {
	if size == len(b.buf) {
		return
	}
	var nb []byte
	if size > 0 {
		nb = make([]byte, size)
	}
	if b.n > 0 {
		tail := b.end - uint64(b.n)
		old := b.snapshot(nil, tail, b.n)
		start := int(tail % uint64(size))
		k := copy(nb[start:], old)
		copy(nb, old[k:])
	}
	b.buf = nb
}

// Compact gives back storage the buffer does not need: it keeps only the
// bytes at or after offset keep (and still held), in storage of exactly
// their size. An ended session's buffer is compacted so it costs what it
// holds, not its maximum.
func (b *Buffer) Compact(keep uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if tail := b.end - uint64(b.n); keep > tail {
		b.n = int(b.end - min(keep, b.end))
		b.gen++
	}
	if b.z != nil {
		// Frozen already: it thaws into storage of exactly what it holds.
		b.zCap = b.n
		return
	}
	b.resize(b.n)
}

// Cap is the storage currently allocated: the ring's, or the compressed
// bytes' while frozen.
func (b *Buffer) Cap() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.buf) + len(b.z)
}

// snapshot appends n stored bytes starting at offset from to dst (caller
// holds mu and has checked the range).
func (b *Buffer) snapshot(dst []byte, from uint64, n int) []byte {
	if b.z != nil {
		dst = append(dst, make([]byte, n)...)
		b.unfreeze(from, dst[len(dst)-n:])
		return dst
	}
	size := uint64(len(b.buf))
	start := int(from % size)
	first := b.buf[start:min(start+n, len(b.buf))]
	dst = append(dst, first...)
	return append(dst, b.buf[:n-len(first)]...)
}

// Head is the offset one past the newest committed byte.
func (b *Buffer) Head() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.head
}

// Tail is the offset of the oldest byte still held.
func (b *Buffer) Tail() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.end - uint64(b.n)
}

// Len is the number of committed bytes held.
func (b *Buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := b.end - uint64(b.n)
	if tail >= b.head {
		return 0
	}
	return int(b.head - tail)
}

// Read copies out up to limit committed bytes (limit <= 0: no limit)
// starting at offset from. It returns the bytes, the offset just past them,
// and how many bytes between from and the oldest held byte were evicted
// unread.
func (b *Buffer) Read(from uint64, limit int) (p []byte, next uint64, evicted uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.read(nil, from, b.head, limit)
}

// ReadStaged appends the stored bytes in [from, End()) — staged ones
// included — to dst.
func (b *Buffer) ReadStaged(dst []byte, from uint64) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, _, _ := b.read(dst, from, b.end, 0)
	return p
}

func (b *Buffer) read(dst []byte, from, to uint64, limit int) (p []byte, next uint64, evicted uint64) {
	tail := b.end - uint64(b.n)
	if from < tail {
		evicted = tail - from
		from = tail
	}
	if from >= to {
		return dst, to, evicted
	}
	n := int(to - from)
	if limit > 0 && n > limit {
		n = limit
	}
	return b.snapshot(dst, from, n), from + uint64(n), evicted
}

// Frozen reports whether the stored bytes are held compressed.
func (b *Buffer) Frozen() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.z != nil
}

// frozenChunk is how many bytes are deflated together: a read of a frozen
// buffer inflates at most this much besides what it returns.
const frozenChunk = 64 << 10

// Freeze compresses the stored bytes and frees the ring's storage; reads
// inflate what they need, the next write thaws the whole. It reports
// whether it froze anything (false: empty, frozen already, or written to
// meanwhile). The compression runs outside the lock on a copy, so writers
// and readers wait only for that copy; if the buffer changed meanwhile, the
// work is dropped and the buffer stays as it is.
func (b *Buffer) Freeze() bool {
	b.mu.Lock()
	if b.z != nil || b.n == 0 {
		b.mu.Unlock()
		return false
	}
	gen, from, n, size := b.gen, b.end-uint64(b.n), b.n, len(b.buf)
	raw := b.snapshot(make([]byte, 0, n), from, n)
	b.mu.Unlock()

	z, ends := deflate(raw)

	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gen != gen || b.z != nil {
		return false
	}
	b.z, b.zEnds, b.zFrom, b.zLen, b.zCap = z, ends, from, n, size
	b.buf = nil
	return true
}

// unfreeze fills d with the frozen bytes from offset from on, inflating
// only the chunks that hold them (caller holds mu).
func (b *Buffer) unfreeze(from uint64, d []byte) {
	for len(d) > 0 {
		i, off := int((from-b.zFrom)/frozenChunk), int((from-b.zFrom)%frozenChunk)
		k := min(len(d), min(frozenChunk, b.zLen-i*frozenChunk)-off)
		start := 0
		if i > 0 {
			start = b.zEnds[i-1]
		}
		inflate(b.z[start:b.zEnds[i]], off, d[:k])
		d, from = d[k:], from+uint64(k)
	}
}

// thaw restores frozen bytes into storage of the size they were frozen
// from, inflating straight into it (caller holds mu).
func (b *Buffer) thaw() {
	if b.z == nil {
		return
	}
	if b.n > 0 {
		size := max(b.zCap, b.n)
		buf := make([]byte, size)
		tail := b.end - uint64(b.n)
		start := int(tail % uint64(size))
		first := buf[start:min(start+b.n, size)]
		b.unfreeze(tail, first)
		b.unfreeze(tail+uint64(len(first)), buf[:b.n-len(first)])
		b.buf = buf
	} // else DiscardTo dropped them all: storage comes back as it grows
	b.z, b.zEnds = nil, nil
}

var (
	writers = sync.Pool{New: func() any {
		w, err := flate.NewWriter(nil, flate.BestSpeed)
		if err != nil {
			panic(err)
		}
		return w
	}}
	readers sync.Pool
)

// deflate compresses raw in frozenChunk pieces, each on its own, into one
// slice of exactly the size they take, and says where each piece ends.
func deflate(raw []byte) (z []byte, ends []int) {
	var out bytes.Buffer
	out.Grow(len(raw) / 4)
	w := writers.Get().(*flate.Writer)
	for p := raw; len(p) > 0; {
		k := min(len(p), frozenChunk)
		w.Reset(&out)
		w.Write(p[:k]) // a bytes.Buffer does not fail
		w.Close()
		ends = append(ends, out.Len())
		p = p[k:]
	}
	writers.Put(w)
	// Exactly its size: this is what an idle session keeps.
	return bytes.Clone(out.Bytes()), ends
}

// inflate decompresses z, skips its first skip bytes and fills d.
func inflate(z []byte, skip int, d []byte) {
	src := bytes.NewReader(z)
	var r io.ReadCloser
	if v := readers.Get(); v != nil {
		r = v.(io.ReadCloser)
		r.(flate.Resetter).Reset(src, nil)
	} else {
		r = flate.NewReader(src)
	}
	_, err := io.CopyN(io.Discard, r, int64(skip))
	if err == nil {
		_, err = io.ReadFull(r, d)
	}
	if err != nil {
		// Only this package wrote z, with at least these bytes.
		panic(fmt.Sprintf("ringbuf: thawing: %v", err))
	}
	readers.Put(r)
}
