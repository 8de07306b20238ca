package core

//go:generate sh -c "cd internal/gen && go run . ../../width_table.go"

type widthRange struct {
	lo, hi uint32
	w      uint8
}

// runeWidth is the number of columns r takes: 0 (combining, attached to the
// previous cell), 1 or 2. Controls never reach it.
func runeWidth(r rune) int {
	if r < 0x300 {
		return 1
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
