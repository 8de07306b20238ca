package core

// The grapheme table's index: open addressing over t.graphemes, in place of
// a map[string]uint32, as styletab.go does for styles. graphSlots holds
// index+1 of a grapheme (0 an empty slot), at most half full; it is rebuilt
// when the table is compacted, reset or replaced. Besides sparing the
// runtime's generic string hash, it keeps the index in a slice without
// pointers: TinyGo's collector scans a map's buckets word by word as if
// each could be a pointer, and their hash bytes, taken for addresses, kept
// old tables alive until a 256x128 screen fed new graphemes outgrew a
// 64 MiB instance (issue 19, the TinyGo feasibility study).

// graphHash hashes a grapheme's bytes (FNV-1a).
func graphHash[T string | []byte](s T) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// graphLookup returns the index of s, if the table holds it.
func (t *Terminal) graphLookup(s []byte, h uint32) (uint32, bool) {
	slots := t.graphSlots
	if len(slots) == 0 {
		return 0, false
	}
	mask := uint32(len(slots) - 1)
	for j := h & mask; ; j = (j + 1) & mask {
		v := slots[j]
		if v == 0 {
			return 0, false
		}
		if g := t.graphemes.at(v - 1); len(g) == len(s) && sameBytes(g, s) {
			return v - 1, true
		}
	}
}

// graphInsert records graphemes[i] in the index, growing it to stay at
// most half full.
func (t *Terminal) graphInsert(i, h uint32) {
	if 2*(t.graphemes.n()+1) > len(t.graphSlots) {
		t.rebuildGraphSlots()
		return // the rebuild indexed every grapheme, i included
	}
	slotPut(t.graphSlots, i, h)
}

// rebuildGraphSlots indexes t.graphemes afresh (the first of equal
// graphemes wins a lookup).
func (t *Terminal) rebuildGraphSlots() {
	t.graphSlots = slotsFor(t.graphSlots, t.graphemes.n())
	for i := range uint32(t.graphemes.n()) {
		slotPut(t.graphSlots, i, graphHash(t.graphemes.at(i)))
	}
}

// graphTable holds the graphemes (a base character and its combining
// marks) as one array of their bytes and one of their ends, grapheme i
// being buf[end[i-1]:end[i]]: two pointer-free arrays instead of a string
// allocated for each. Under TinyGo (a non-moving collector) those small
// strings, spread through the heap as it grows and outliving the large
// arrays freed between them, fragmented a worst-case instance until a
// table or a screen found no room in a heap four times its live data.
type graphTable struct {
	buf []byte
	end []uint32
}

func (g *graphTable) n() int { return len(g.end) }

// at returns grapheme i's bytes (valid until the table changes).
func (g *graphTable) at(i uint32) []byte {
	b := uint32(0)
	if i > 0 {
		b = g.end[i-1]
	}
	return g.buf[b:g.end[i]:g.end[i]]
}

// add appends grapheme s.
func (g *graphTable) add(s []byte) {
	g.buf = append(reserve(g.buf, len(s)), s...)
	g.end = append(reserve(g.end, 1), uint32(len(g.buf)))
}

func (g *graphTable) reset() {
	g.buf = g.buf[:0]
	g.end = g.end[:0]
}

func sameBytes(a, b []byte) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
