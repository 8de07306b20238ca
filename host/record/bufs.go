package record

import "sync"

// Buffer sizes: classes of minBuf<<k bytes up to maxBuf. A recorder's
// first block after a quiet spell is of the smallest class, each next one
// four times the last up to blockSize, so an interactive session holds a
// few KiB and a flood is handled in blocks of blockSize; the writer's
// buffer is of the class that holds what it takes.
const (
	minBuf   = 4 << 10
	maxBuf   = 2 << 20
	nClasses = 10 // minBuf<<9 == maxBuf
	keepPer  = 1 << 20
)

// bufs keeps buffers of each class for reuse, at most keepPer bytes (and
// at least two buffers) of each, shared by every recorder: a recorder
// holds none while it is idle; the rest are left to the garbage
// collector. (A sync.Pool does not keep them reliably: under the race
// detector it drops some on purpose, so a turn would allocate.)
var bufs bufPool

type bufPool struct {
	mu    sync.Mutex
	lists [nClasses][]*[]byte
}

// class is the smallest class that holds n bytes (-1: none does).
func class(n int) int {
	for k := range nClasses {
		if n <= minBuf<<k {
			return k
		}
	}
	return -1
}

// get is an empty buffer that holds at least n bytes.
func (p *bufPool) get(n int) *[]byte {
	k := class(n)
	if k < 0 {
		b := make([]byte, 0, n)
		return &b
	}
	p.mu.Lock()
	if l := p.lists[k]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		p.lists[k] = l[:len(l)-1]
		p.mu.Unlock()
		return b
	}
	p.mu.Unlock()
	b := make([]byte, 0, minBuf<<k)
	return &b
}

// put gives b back for reuse (one of no class's size is left alone).
func (p *bufPool) put(b *[]byte) {
	k := class(cap(*b))
	if k < 0 || cap(*b) != minBuf<<k {
		return
	}
	*b = (*b)[:0]
	p.mu.Lock()
	if len(p.lists[k]) < max(2, keepPer/(minBuf<<k)) {
		p.lists[k] = append(p.lists[k], b)
	}
	p.mu.Unlock()
}
