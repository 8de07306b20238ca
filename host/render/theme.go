package render

// Theme is the colours of a picture: the default foreground and
// background, the cursor, and the 256 indexed colours (0-15 the ANSI
// colours, then the xterm 6×6×6 cube and 24 greys).
type Theme struct {
	FG, BG, Cursor rgb
	Palette        [256]rgb
	// BoldBright draws bold text in colours 0-7 in their bright variant.
	BoldBright bool
}

// Dark is the default theme: light grey on near-black, the ANSI colours
// of VS Code's terminal (readable on the dark background).
var Dark = func() *Theme {
	th := &Theme{FG: rgb{0xe5, 0xe5, 0xe5}, BG: rgb{0x1e, 0x1e, 0x1e}, Cursor: rgb{0xe5, 0xe5, 0xe5}}
	ansi := [16]uint32{
		0x000000, 0xcd3131, 0x0dbc79, 0xe5e510, 0x2472c8, 0xbc3fbc, 0x11a8cd, 0xe5e5e5,
		0x666666, 0xf14c4c, 0x23d18b, 0xf5f543, 0x3b8eea, 0xd670d6, 0x29b8db, 0xffffff,
	}
	for i, v := range ansi {
		th.Palette[i] = rgb{uint8(v >> 16), uint8(v >> 8), uint8(v)}
	}
	steps := [6]uint8{0, 95, 135, 175, 215, 255}
	for i := 0; i < 216; i++ {
		th.Palette[16+i] = rgb{steps[i/36], steps[i/6%6], steps[i%6]}
	}
	for i := 0; i < 24; i++ {
		v := uint8(8 + 10*i)
		th.Palette[232+i] = rgb{v, v, v}
	}
	return th
}()
