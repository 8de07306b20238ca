// Package ringbuf is a session's raw output buffer: a bounded byte ring with
// FIFO eviction of the oldest bytes, addressed by absolute stream offsets so
// that any number of readers can keep their own cursor.
//
// Offsets count every byte ever written; the ring holds [Tail, Head). A
// reader that asks for bytes below Tail learns how many were evicted before
// it could read them. Memory grows with use, up to the maximum, so an idle
// session costs little.
package ringbuf

import "sync"

const minAlloc = 4 << 10

// Buffer is safe for concurrent use.
type Buffer struct {
	mu   sync.Mutex
	max  int
	buf  []byte // circular storage, len(buf) <= max
	head uint64 // offset one past the newest byte
	n    int    // bytes held
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

// Write appends p, evicting the oldest bytes beyond the maximum. It never
// blocks and never fails.
func (b *Buffer) Write(p []byte) {
	if len(p) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(p) >= b.max {
		b.head += uint64(len(p))
		if len(b.buf) != b.max {
			b.buf = make([]byte, b.max)
		}
		// The newest max bytes, stored at their offset-derived positions.
		tail := b.head - uint64(b.max)
		start := int(tail % uint64(b.max))
		k := copy(b.buf[start:], p[len(p)-b.max:])
		copy(b.buf, p[len(p)-b.max+k:])
		b.n = b.max
		return
	}
	if need := b.n + len(p); need > len(b.buf) && len(b.buf) < b.max {
		b.grow(need)
	}
	// Write at the position of the old head, wrapping.
	start := int(b.head % uint64(len(b.buf)))
	b.head += uint64(len(p))
	k := copy(b.buf[start:], p)
	copy(b.buf, p[k:])
	b.n = min(b.n+len(p), len(b.buf))
}

// grow resizes storage to hold at least need bytes (capped at max), keeping
// the held bytes at their offset-derived positions.
func (b *Buffer) grow(need int) {
	size := max(len(b.buf), minAlloc)
	for size < need {
		size *= 2
	}
	size = min(size, b.max)
	if size == len(b.buf) {
		return
	}
	nb := make([]byte, size)
	if b.n > 0 {
		old := b.snapshot(b.head-uint64(b.n), b.n)
		tail := b.head - uint64(b.n)
		for i, c := range old {
			nb[(tail+uint64(i))%uint64(size)] = c
		}
	}
	b.buf = nb
}

// snapshot copies n held bytes starting at offset from (caller holds mu and
// has checked the range). Uses the current storage size.
func (b *Buffer) snapshot(from uint64, n int) []byte {
	out := make([]byte, n)
	size := uint64(len(b.buf))
	start := int(from % size)
	k := copy(out, b.buf[start:min(start+n, len(b.buf))])
	copy(out[k:], b.buf[:n-k])
	return out
}

// Head is the offset one past the newest byte.
func (b *Buffer) Head() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.head
}

// Tail is the offset of the oldest byte still held.
func (b *Buffer) Tail() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.head - uint64(b.n)
}

// Len is the number of bytes held.
func (b *Buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// Read copies out up to limit bytes (limit <= 0: no limit) starting at
// offset from. It returns the bytes, the offset just past them, and how many
// bytes between from and the oldest held byte were evicted unread.
func (b *Buffer) Read(from uint64, limit int) (p []byte, next uint64, evicted uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tail := b.head - uint64(b.n)
	if from < tail {
		evicted = tail - from
		from = tail
	}
	if from >= b.head {
		return nil, b.head, evicted
	}
	n := int(b.head - from)
	if limit > 0 && n > limit {
		n = limit
	}
	return b.snapshot(from, n), from + uint64(n), evicted
}
