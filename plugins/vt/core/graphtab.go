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
		if g := t.graphemes[v-1]; len(g) == len(s) && g == string(s) {
			return v - 1, true
		}
	}
}

// graphInsert records graphemes[i] in the index, growing it to stay at
// most half full.
func (t *Terminal) graphInsert(i, h uint32) {
	if 2*(len(t.graphemes)+1) > len(t.graphSlots) {
		t.rebuildGraphSlots()
		return // the rebuild indexed every grapheme, i included
	}
	slotPut(t.graphSlots, i, h)
}

// rebuildGraphSlots indexes t.graphemes afresh (the first of equal
// graphemes wins a lookup).
func (t *Terminal) rebuildGraphSlots() {
	t.graphSlots = slotsFor(t.graphSlots, len(t.graphemes))
	for i, g := range t.graphemes {
		slotPut(t.graphSlots, uint32(i), graphHash(g))
	}
}
