package core

// Color is a cell colour: the default colour, one of the 256 indexed colours
// or a 24-bit RGB value. The zero Color is the default.
type Color uint32

const (
	colorIndexed = 1 << 24
	colorRGB     = 2 << 24
)

// DefaultColor is the terminal's default foreground or background.
const DefaultColor Color = 0

// IndexedColor returns indexed colour i (0-15 the ANSI colours, 16-255 the
// xterm cube and greys).
func IndexedColor(i uint8) Color { return Color(colorIndexed | uint32(i)) }

// RGBColor returns a truecolor value.
func RGBColor(r, g, b uint8) Color {
	return Color(colorRGB | uint32(r)<<16 | uint32(g)<<8 | uint32(b))
}

// IsDefault reports whether c is the default colour.
func (c Color) IsDefault() bool { return c == 0 }

// Indexed returns the palette index if c is an indexed colour.
func (c Color) Indexed() (uint8, bool) { return uint8(c), c&0xff000000 == colorIndexed }

// RGB returns the components if c is a truecolor value.
func (c Color) RGB() (r, g, b uint8, ok bool) {
	return uint8(c >> 16), uint8(c >> 8), uint8(c), c&0xff000000 == colorRGB
}

// Attrs are the rendition bits of a cell.
type Attrs uint16

// Rendition bits.
const (
	Bold Attrs = 1 << iota
	Dim
	Italic
	Underline
	Blink
	Reverse
	Invisible
	Strike
	Overline
	// Protected marks a cell written under DECSCA 1: selective erase spares it.
	Protected
)

// Cell is one screen cell as seen by tests and renderers.
type Cell struct {
	Text           string // the character and its combining marks; " " if blank; "" for the right half of a wide character
	Width          int    // 1, 2 (left half of a wide character) or 0 (right half)
	FG, BG         Color
	UnderlineColor Color
	Attrs          Attrs
	UnderlineStyle int // 0 none, 1 single, 2 double, 3 curly, 4 dotted, 5 dashed
}

// style is the pen of a cell. Cells hold a uint16 index into the terminal's
// style table instead of the style itself.
type style struct {
	fg, bg, ul Color
	attrs      Attrs
	ulStyle    uint8 // 0..5, nonzero iff attrs has Underline
	_          uint8
}

// cell is 8 bytes and holds no pointer, so a screen is one flat allocation
// that the garbage collector never scans. It is a single word so that
// writing, clearing and comparing a cell is one machine operation, also in
// WebAssembly:
//
//	bits  0-31 rune, 0 for a blank never written; an index into
//	           Terminal.graphemes if flags has cellGrapheme
//	bits 32-47 style index
//	bits 48-55 flags
type cell uint64

func mkCell(r uint32, style uint16, flags uint8) cell {
	return cell(uint64(r) | uint64(style)<<32 | uint64(flags)<<48)
}

func (c cell) r() uint32     { return uint32(c) }
func (c cell) style() uint16 { return uint16(c >> 32) }
func (c cell) flags() uint8  { return uint8(c >> 48) }
func (c cell) withStyle(s uint16) cell {
	return c&^(0xffff<<32) | cell(s)<<32
}

const (
	cellWide     uint8 = 1 << iota // left half of a wide character
	cellSpacer                     // right half of a wide character
	cellGrapheme                   // r indexes Terminal.graphemes (base + combining marks)
)

// maxStyles bounds the style table; when full it is compacted.
const maxStyles = 1 << 16

// maxGraphemes bounds the table of characters with combining marks; when
// full, further marks are dropped until a compaction frees entries.
const maxGraphemes = 1 << 16

// maxMarksBytes bounds the combining marks kept on one cell.
const maxMarksBytes = 32
