package core

//go:generate sh -c "cd internal/gen && go run . ../../width_table.go"

type widthRange struct {
	lo, hi uint32
	w      uint8
}

// bmpWidths holds the width of every code point below U+20000 (the BMP
// and the plane of emoji), two bits each, expanded once from widthRanges:
// a table lookup beats a binary search over some 500 ranges.
var bmpWidths = func() *[1 << 15]byte {
	var t [1 << 15]byte
	for i := range t {
		t[i] = 0b01010101 // width 1
	}
	for _, r := range widthRanges {
		for u := r.lo; u <= r.hi && u < 1<<17; u++ {
			sh := (u & 3) * 2
			t[u>>2] = t[u>>2]&^(3<<sh) | r.w<<sh
		}
	}
	return &t
}()

// runeWidth is the number of columns r takes: 0 (combining, attached to the
// previous cell), 1 or 2. Controls never reach it.
func runeWidth(r rune) int {
	if r < 0x300 {
		return 1
	}
	if r < 1<<17 {
		return int(bmpWidths[r>>2] >> ((r & 3) * 2) & 3)
	}
	lo, hi := 0, len(widthRanges)
	u := uint32(r)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		wr := &widthRanges[m]
		switch {
		case u < wr.lo:
			hi = m
		case u > wr.hi:
			lo = m + 1
		default:
			return int(wr.w)
		}
	}
	return 1
}
