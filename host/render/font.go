package render

import (
	"fmt"
	"image"
	"image/draw"
	"math"
	"sync"
	"unicode/utf8"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/gomonobold"
	"golang.org/x/image/font/gofont/gomonobolditalic"
	"golang.org/x/image/font/gofont/gomonoitalic"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"golang.org/x/text/unicode/norm"
)

// Renderer draws screens at one font size. It is safe for concurrent use.
type Renderer struct {
	theme *Theme
	// cellW×cellH is a cell in pixels; ascent is the baseline's row in a cell.
	cellW, cellH, ascent int
	size                 float64

	mu       sync.Mutex
	faces    [4]font.Face // regular, bold, italic, bold italic (Go Mono)
	fallback [2]font.Face // Go Regular and Go Bold, for what Go Mono lacks
	glyphs   map[glyphKey][]uint8
}

// glyphKey names a cached glyph mask.
type glyphKey struct {
	text string
	face uint8 // bold | italic<<1
	wide bool
}

// maxGlyphs bounds the glyph cache (each a cell's alpha mask); when full it
// starts again.
const maxGlyphs = 4096

// DefaultSize is the font size of the pictures view_screen returns, in
// pixels: a cell of 10×20 pixels, an 80x24 screen 800×480.
const DefaultSize = 16.5

var defaultRenderer = sync.OnceValues(func() (*Renderer, error) { return New(DefaultSize, Dark) })

// Default is the renderer at DefaultSize with the Dark theme.
func Default() (*Renderer, error) { return defaultRenderer() }

// New makes a renderer at a font size in pixels.
func New(size float64, th *Theme) (*Renderer, error) {
	if !(size >= 4 && size <= 128) {
		return nil, fmt.Errorf("render: font size %v: expected 4 to 128 pixels", size)
	}
	r := &Renderer{theme: th, size: size, glyphs: map[glyphKey][]uint8{}}
	for i, ttf := range [][]byte{gomono.TTF, gomonobold.TTF, gomonoitalic.TTF, gomonobolditalic.TTF, goregular.TTF, gobold.TTF} {
		f, err := opentype.Parse(ttf)
		if err != nil {
			return nil, fmt.Errorf("render: font: %v", err)
		}
		face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull})
		if err != nil {
			return nil, fmt.Errorf("render: font: %v", err)
		}
		if i < 4 {
			r.faces[i] = face
		} else {
			r.fallback[i-4] = face
		}
	}
	m := r.faces[0].Metrics()
	adv, _ := r.faces[0].GlyphAdvance('M')
	r.cellW = int(math.Ceil(float64(adv) / 64))
	r.ascent = m.Ascent.Ceil()
	r.cellH = r.ascent + m.Descent.Ceil()
	if lh := m.Height.Ceil(); lh > r.cellH {
		r.ascent += (lh - r.cellH + 1) / 2
		r.cellH = lh
	}
	return r, nil
}

// CellSize is a cell's width and height in pixels.
func (r *Renderer) CellSize() (w, h int) { return r.cellW, r.cellH }

// glyph returns the alpha mask of text drawn in a cell (two cells if
// wide), cellH rows of cellW (or 2·cellW) bytes. The slice is never
// written again: it may be read without the lock.
func (r *Renderer) glyph(text string, face uint8, wide bool) []uint8 {
	k := glyphKey{text, face, wide}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.glyphs[k]; ok {
		return m
	}
	w := r.cellW
	if wide {
		w *= 2
	}
	dst := image.NewAlpha(image.Rect(0, 0, w, r.cellH))
	base := true
	var x, baseX fixed.Int26_6
	if !norm.NFC.IsNormalString(text) {
		text = norm.NFC.String(text) // e + U+0301 is é, which the font has
	}
	for _, ch := range text {
		f, fb := r.faces[face], r.fallback[face&1]
		adv, ok := f.GlyphAdvance(ch)
		if !ok && !base {
			// The Go fonts have no combining marks: draw the spacing
			// accent that looks like one over the character.
			if sp, known := spacingMark[ch]; known {
				if _, has := f.GlyphAdvance(sp); has {
					if dr, mask, mp, _, ok := f.Glyph(fixed.Point26_6{X: baseX, Y: fixed.I(r.ascent)}, sp); ok && mask != nil {
						draw.DrawMask(dst, dr, image.Opaque, image.Point{}, mask, mp, draw.Over)
					}
				}
			}
			continue
		}
		if !ok {
			f = fb
			if adv, ok = f.GlyphAdvance(ch); !ok {
				if base {
					tofu(dst)
				}
				base = false
				continue
			}
		}
		dot := fixed.Point26_6{Y: fixed.I(r.ascent)}
		switch {
		case base:
			// Centre a glyph narrower or wider than its cells (a fallback
			// font's, or a wide character's).
			dot.X = (fixed.I(w) - adv) / 2
			if adv == fixed.I(r.cellW) || adv > fixed.I(w) {
				dot.X = 0
			}
			x, baseX = dot.X+adv, dot.X
		case adv == 0:
			dot.X = x // a mark with no advance sits over what precedes it
		default:
			dot.X = x - adv
		}
		base = false
		dr, mask, mp, _, ok := f.Glyph(dot, ch)
		if ok && mask != nil {
			draw.DrawMask(dst, dr, image.Opaque, image.Point{}, mask, mp, draw.Over)
		}
	}
	if len(r.glyphs) >= maxGlyphs {
		clear(r.glyphs)
	}
	r.glyphs[k] = dst.Pix
	return dst.Pix
}

// spacingMark is the spacing accent drawn for a combining mark.
var spacingMark = map[rune]rune{
	0x300: '`', 0x301: 0xb4, 0x302: 0x2c6, 0x303: 0x2dc, 0x304: 0xaf, 0x306: 0x2d8, 0x307: 0x2d9,
	0x308: 0xa8, 0x30a: 0x2da, 0x30b: 0x2dd, 0x30c: 0x2c7, 0x327: 0xb8, 0x328: 0x2db,
}

// tofu draws the box that stands for a character no font has.
func tofu(dst *image.Alpha) {
	b := dst.Bounds()
	x0, y0, x1, y1 := b.Min.X+1, b.Min.Y+b.Dy()/6, b.Max.X-2, b.Max.Y-b.Dy()/6
	for x := x0; x <= x1; x++ {
		dst.Pix[y0*dst.Stride+x], dst.Pix[y1*dst.Stride+x] = 0xff, 0xff
	}
	for y := y0; y <= y1; y++ {
		dst.Pix[y*dst.Stride+x0], dst.Pix[y*dst.Stride+x1] = 0xff, 0xff
	}
}

// blank reports whether text draws nothing.
func blank(text string) bool {
	if text == "" || text == " " {
		return true
	}
	r, n := utf8.DecodeRuneInString(text)
	return n == len(text) && (r == '\u00a0' || r == '\u3000')
}
