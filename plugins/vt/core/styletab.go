package core

// The style table's index: open addressing over t.styles, in place of a
// map[style]uint16. A map lookup hashes the 16-byte key with the runtime's
// generic hash, which under WebAssembly (no AES hash there) cost more than
// the rest of an SGR's handling; dense colour output interns a style per
// SGR. styleSlots holds index+1 of a style (0 an empty slot), at most half
// full; it is rebuilt when the table is compacted or replaced, and costs 4
// bytes a style where the map took about 40.

// styleHash32 hashes a style (ulStyle normalised by the caller).
func styleHash32(s style) uint32 {
	x := uint32(s.fg)*0x9E3779B1 ^ uint32(s.bg)*0x85EBCA6B ^ uint32(s.ul)*0xC2B2AE35 ^ uint32(s.attrs)<<8 ^ uint32(s.ulStyle)
	x ^= x >> 15
	x *= 0x2C1B3C6D
	x ^= x >> 13
	return x
}

// styleLookup returns the index of s, if the table holds it.
func (t *Terminal) styleLookup(s style, h uint32) (uint16, bool) {
	slots := t.styleSlots
	mask := uint32(len(slots) - 1)
	for j := h & mask; ; j = (j + 1) & mask {
		v := slots[j]
		if v == 0 {
			return 0, false
		}
		if sameStyle(&t.styles[v-1], &s) {
			return v - 1, true
		}
	}
}

// styleInsert records styles[i] in the index, growing it to stay at most
// half full.
func (t *Terminal) styleInsert(i uint16, h uint32) {
	if 2*(len(t.styles)+1) > len(t.styleSlots) {
		t.rebuildStyleSlots()
		return // the rebuild indexed every style, i included
	}
	slotPut(t.styleSlots, i, h)
}

// slotPut records index i (as i+1) in the first free slot from hash h on:
// the insertion of the style and grapheme indexes (graphtab.go).
func slotPut[S uint16 | uint32](slots []S, i S, h uint32) {
	mask := uint32(len(slots) - 1)
	j := h & mask
	for slots[j] != 0 {
		j = (j + 1) & mask
	}
	slots[j] = i + 1
}

// slotsFor returns slots emptied and sized, a power of two from 64, to
// index n entries at most half full, reusing its array where it can.
func slotsFor[S uint16 | uint32](slots []S, n int) []S {
	size := 64
	for size < 2*(n+1) {
		size <<= 1
	}
	if cap(slots) >= size {
		slots = slots[:size]
		clear(slots)
		return slots
	}
	return make([]S, size)
}

// rebuildStyleSlots indexes t.styles afresh (the first of equal styles
// wins a lookup).
func (t *Terminal) rebuildStyleSlots() {
	t.styleSlots = slotsFor(t.styleSlots, len(t.styles))
	for i, s := range t.styles {
		slotPut(t.styleSlots, uint16(i), styleHash32(s))
	}
}

// sameStyle is a == b field by field: the compiler's == on a struct calls
// a generated function, a call per probe under WebAssembly.
func sameStyle(a, b *style) bool {
	return a.fg == b.fg && a.bg == b.bg && a.ul == b.ul && a.attrs == b.attrs && a.ulStyle == b.ulStyle
}
