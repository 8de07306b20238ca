package render

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"sync"
)

// MaxSide bounds a picture's width and height in pixels (what image
// models take); a screen that would be larger is refused, not drawn.
const MaxSide = 8000

// checkSize refuses a picture over MaxSide pixels a side.
func (r *Renderer) checkSize(s *Screen) (w, h int, err error) {
	w, h = s.Cols*r.cellW, s.Rows*r.cellH
	if w > MaxSide || h > MaxSide {
		return w, h, fmt.Errorf("a %dx%d screen is %dx%d pixels; a picture is at most %d pixels a side (%d columns, %d rows): resize the terminal or view it as text",
			s.Cols, s.Rows, w, h, MaxSide, MaxSide/r.cellW, MaxSide/r.cellH)
	}
	return w, h, nil
}

// pair is a cell's foreground on its background.
type pair struct{ fg, bg rgb }

var encoders = sync.Pool{New: func() any { return new(png.EncoderBuffer) }}

type pool struct{}

func (pool) Get() *png.EncoderBuffer  { return encoders.Get().(*png.EncoderBuffer) }
func (pool) Put(b *png.EncoderBuffer) { encoders.Put(b) }

// PNG draws s as a PNG. Text is anti-aliased in as many shades as a
// 256-colour palette allows (8 per colour pair, fewer when the screen has
// many pairs); a screen with more colours than a palette holds is drawn
// in true colour.
func (r *Renderer) PNG(s *Screen) ([]byte, error) {
	g, err := grid(s, r.theme)
	if err != nil {
		return nil, err
	}
	w, h, err := r.checkSize(s)
	if err != nil {
		return nil, err
	}
	var img image.Image
	if levels, pal, index := r.palette(g); levels > 0 {
		img = r.paletted(s, g, w, h, levels, pal, index)
	} else {
		img = r.truecolor(s, g, w, h)
	}
	var buf bytes.Buffer
	buf.Grow(32 << 10)
	// Large pictures trade a little size for half the time.
	level := png.DefaultCompression
	if w*h > 1<<20 {
		level = png.BestSpeed
	}
	enc := png.Encoder{CompressionLevel: level, BufferPool: pool{}}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// palette chooses the shades of anti-aliasing (8, 4 or 2 levels) that let
// every colour pair fit a 256-colour palette; 0 if none does.
func (r *Renderer) palette(g []cell) (levels int, pal color.Palette, index map[rgb]uint8) {
	// In the order first seen, so the same screen makes the same bytes.
	solid, pairs := set[rgb]{}, set[pair]{}
	for i := range g {
		c := &g[i]
		solid.add(c.bg)
		if !blank(c.text) {
			solid.add(c.fg)
			pairs.add(pair{c.fg, c.bg})
		}
		if c.attrs&(attrStrike|attrOverline) != 0 {
			solid.add(c.fg)
		}
		if c.ulStyle != 0 {
			solid.add(c.ul)
		}
	}
	for _, levels = range []int{8, 4, 2} {
		if len(solid.order)+len(pairs.order)*(levels-2) <= 256 {
			break
		}
		levels = 0
	}
	if levels == 0 {
		return 0, nil, nil
	}
	index = make(map[rgb]uint8, 256)
	add := func(c rgb) {
		if _, ok := index[c]; !ok && len(pal) < 256 {
			index[c] = uint8(len(pal))
			pal = append(pal, color.RGBA{c.r, c.g, c.b, 0xff})
		}
	}
	add(r.theme.BG)
	for _, c := range solid.order {
		add(c)
	}
	for _, p := range pairs.order {
		for l := 1; l < levels-1; l++ {
			add(mix(p.fg, p.bg, l*255/(levels-1)))
		}
	}
	return levels, pal, index
}

// set is a set that remembers the order its members came in.
type set[T comparable] struct {
	seen  map[T]bool
	order []T
}

func (s *set[T]) add(v T) {
	if s.seen == nil {
		s.seen = map[T]bool{}
	}
	if !s.seen[v] && len(s.order) <= 1<<16 {
		s.seen[v] = true
		s.order = append(s.order, v)
	}
}

// mix is fg over bg at alpha a (0-255).
func mix(fg, bg rgb, a int) rgb {
	m := func(f, b uint8) uint8 { return uint8((int(f)*a + int(b)*(255-a) + 127) / 255) }
	return rgb{m(fg.r, bg.r), m(fg.g, bg.g), m(fg.b, bg.b)}
}

func faceOf(attrs uint16) uint8 {
	f := uint8(0)
	if attrs&attrBold != 0 {
		f |= 1
	}
	if attrs&attrItalic != 0 {
		f |= 2
	}
	return f
}

func (r *Renderer) paletted(s *Screen, g []cell, w, h, levels int, pal color.Palette, index map[rgb]uint8) image.Image {
	img := image.NewPaletted(image.Rect(0, 0, w, h), pal)
	var quant [256]uint8
	for a := range quant {
		quant[a] = uint8((a*(levels-1) + 127) / 255)
	}
	lut := make([]uint8, levels)
	for row := 0; row < s.Rows; row++ {
		for col := 0; col < s.Cols; col++ {
			c := &g[row*s.Cols+col]
			if c.spacer {
				continue
			}
			cw := r.cellW
			if c.wide {
				cw *= 2
			}
			x0, y0 := col*r.cellW, row*r.cellH
			bg := index[c.bg]
			if blank(c.text) {
				if bg != 0 {
					for y := y0; y < y0+r.cellH; y++ {
						p := img.Pix[y*img.Stride+x0 : y*img.Stride+x0+cw]
						for i := range p {
							p[i] = bg
						}
					}
				}
			} else {
				lut[0], lut[levels-1] = bg, index[c.fg]
				for l := 1; l < levels-1; l++ {
					lut[l] = index[mix(c.fg, c.bg, l*255/(levels-1))]
				}
				m := r.glyph(c.text, faceOf(c.attrs), c.wide)
				for y := 0; y < r.cellH; y++ {
					p := img.Pix[(y0+y)*img.Stride+x0 : (y0+y)*img.Stride+x0+cw]
					mr := m[y*cw : (y+1)*cw]
					for i, a := range mr {
						p[i] = lut[quant[a]]
					}
				}
			}
			r.decorate(c, x0, y0, cw, func(x, y int, col rgb) { img.Pix[y*img.Stride+x] = index[col] })
		}
	}
	return img
}

func (r *Renderer) truecolor(s *Screen, g []cell, w, h int) image.Image {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	set := func(x, y int, c rgb) {
		p := img.Pix[y*img.Stride+4*x:]
		p[0], p[1], p[2], p[3] = c.r, c.g, c.b, 0xff
	}
	for row := 0; row < s.Rows; row++ {
		for col := 0; col < s.Cols; col++ {
			c := &g[row*s.Cols+col]
			if c.spacer {
				continue
			}
			cw := r.cellW
			if c.wide {
				cw *= 2
			}
			x0, y0 := col*r.cellW, row*r.cellH
			var m []uint8
			if !blank(c.text) {
				m = r.glyph(c.text, faceOf(c.attrs), c.wide)
			}
			for y := 0; y < r.cellH; y++ {
				for x := 0; x < cw; x++ {
					if m == nil || m[y*cw+x] == 0 {
						set(x0+x, y0+y, c.bg)
					} else {
						set(x0+x, y0+y, mix(c.fg, c.bg, int(m[y*cw+x])))
					}
				}
			}
			r.decorate(c, x0, y0, cw, set)
		}
	}
	return img
}

// decorate draws a cell's lines: underline (single, double, curly,
// dotted, dashed), strike-through and overline.
func (r *Renderer) decorate(c *cell, x0, y0, cw int, set func(x, y int, c rgb)) {
	if c.ulStyle == 0 && c.attrs&(attrStrike|attrOverline) == 0 {
		return
	}
	t := max(1, r.cellH/20)
	line := func(y int, col rgb, on func(x int) bool) {
		for dy := 0; dy < t; dy++ {
			if yy := y + dy; yy >= 0 && yy < r.cellH {
				for x := 0; x < cw; x++ {
					if on == nil || on(x0+x) {
						set(x0+x, y0+yy, col)
					}
				}
			}
		}
	}
	ul := min(r.ascent+max(1, (r.cellH-r.ascent)/3), r.cellH-t)
	switch c.ulStyle {
	case 0:
	case 2: // double
		line(ul-t, c.ul, nil)
		line(min(ul+t, r.cellH-t), c.ul, nil)
	case 3: // curly: a zigzag of period 4t
		for x := 0; x < cw; x++ {
			ph := (x0 + x) % (4 * t)
			dy := 0
			if ph >= 2*t {
				dy = t
			}
			line(ul-t+dy, c.ul, func(xx int) bool { return xx == x0+x })
		}
	case 4: // dotted
		line(ul, c.ul, func(x int) bool { return x/t%2 == 0 })
	case 5: // dashed
		line(ul, c.ul, func(x int) bool { return x/(3*t)%4 != 3 })
	default:
		line(ul, c.ul, nil)
	}
	if c.attrs&attrStrike != 0 {
		line(r.ascent-r.cellH*3/10, c.fg, nil)
	}
	if c.attrs&attrOverline != 0 {
		line(0, c.fg, nil)
	}
}
