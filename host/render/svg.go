package render

import (
	"fmt"
	"unicode/utf8"
)

// SVG draws s as an SVG document: a background, a rectangle for each run
// of non-default background, and a text element for each run of one
// style, stretched to its columns (textLength) so any monospaced font
// keeps the grid. Fonts: Go Mono if the viewer has it, else its monospace.
func (r *Renderer) SVG(s *Screen) ([]byte, error) {
	g, err := grid(s, r.theme)
	if err != nil {
		return nil, err
	}
	cw, ch := r.cellW, r.cellH
	w, h := s.Cols*cw, s.Rows*ch
	b := make([]byte, 0, 4096+len(g)*4)
	b = fmt.Appendf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="'Go Mono',ui-monospace,Menlo,Consolas,'DejaVu Sans Mono',monospace" font-size="%g" fill="%s" xml:space="preserve" style="white-space:pre">`,
		w, h, w, h, r.size, hex(r.theme.FG))
	b = fmt.Appendf(b, `<rect width="100%%" height="100%%" fill="%s"/>`, hex(r.theme.BG))
	for row := 0; row < s.Rows; row++ {
		cells := g[row*s.Cols : (row+1)*s.Cols]
		// Backgrounds.
		for col := 0; col < s.Cols; {
			bg := cells[col].bg
			end := col + 1
			for end < s.Cols && cells[end].bg == bg {
				end++
			}
			if bg != r.theme.BG {
				b = fmt.Appendf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`, col*cw, row*ch, (end-col)*cw, ch, hex(bg))
			}
			col = end
		}
		// Text, in runs of one look.
		for col := 0; col < s.Cols; {
			c := cells[col]
			if c.spacer || blank(c.text) && c.ulStyle == 0 && c.attrs&(attrStrike|attrOverline) == 0 {
				col++
				continue
			}
			end, n := col, 0
			var text []byte
			for end < s.Cols {
				d := cells[end]
				if d.spacer {
					end++
					continue
				}
				if d.fg != c.fg || d.ul != c.ul || d.attrs != c.attrs || d.ulStyle != c.ulStyle || d.wide != c.wide || utf8.RuneCountInString(d.text) > 1 && n > 0 {
					break
				}
				plain := c.ulStyle == 0 && c.attrs&(attrStrike|attrOverline) == 0
				if d.text == "" && plain && end+1 < s.Cols && cells[end+1].text == "" && !cells[end+1].spacer {
					break // viewers may collapse blanks: the next text starts at its column
				}
				if d.text == "" {
					text = append(text, ' ')
				} else {
					text = appendXML(text, d.text)
				}
				n++
				end++
				if utf8.RuneCountInString(d.text) > 1 {
					break
				}
			}
			for end > col+1 && cells[end-1].text == "" && !cells[end-1].spacer && c.ulStyle == 0 && c.attrs&(attrStrike|attrOverline) == 0 {
				end-- // trailing blanks draw nothing
				text = text[:len(text)-1]
				n--
			}
			b = fmt.Appendf(b, `<text x="%d" y="%d"`, col*cw, row*ch+r.ascent)
			if n > 1 || c.wide {
				b = fmt.Appendf(b, ` textLength="%d" lengthAdjust="spacingAndGlyphs"`, (end-col)*cw)
			}
			if c.fg != r.theme.FG {
				b = fmt.Appendf(b, ` fill="%s"`, hex(c.fg))
			}
			if c.attrs&attrBold != 0 {
				b = append(b, ` font-weight="bold"`...)
			}
			if c.attrs&attrItalic != 0 {
				b = append(b, ` font-style="italic"`...)
			}
			if c.ulStyle != 0 || c.attrs&(attrStrike|attrOverline) != 0 {
				b = append(b, ` text-decoration="`...)
				sep := ""
				if c.ulStyle != 0 {
					b, sep = append(b, "underline"...), " "
				}
				if c.attrs&attrStrike != 0 {
					b, sep = append(append(b, sep...), "line-through"...), " "
				}
				if c.attrs&attrOverline != 0 {
					b = append(append(b, sep...), "overline"...)
				}
				b = append(b, '"')
				if st := [...]string{2: "double", 3: "wavy", 4: "dotted", 5: "dashed"}; int(c.ulStyle) < len(st) && st[c.ulStyle] != "" || c.ul != c.fg {
					b = append(b, ` style="`...)
					if int(c.ulStyle) < len(st) && st[c.ulStyle] != "" {
						b = append(append(b, "text-decoration-style:"...), st[c.ulStyle]...)
						b = append(b, ';')
					}
					if c.ul != c.fg {
						b = append(append(b, "text-decoration-color:"...), hex(c.ul)...)
					}
					b = append(b, '"')
				}
			}
			b = append(b, '>')
			b = append(b, text...)
			b = append(b, "</text>"...)
			col = end
		}
	}
	return append(b, "</svg>\n"...), nil
}

func hex(c rgb) string {
	const d = "0123456789abcdef"
	return string([]byte{'#', d[c.r>>4], d[c.r&15], d[c.g>>4], d[c.g&15], d[c.b>>4], d[c.b&15]})
}

// appendXML appends text escaped for XML character data; characters XML
// does not allow become U+FFFD.
func appendXML(b []byte, text string) []byte {
	for _, ch := range text {
		switch {
		case ch == '&':
			b = append(b, "&amp;"...)
		case ch == '<':
			b = append(b, "&lt;"...)
		case ch == '>':
			b = append(b, "&gt;"...)
		case ch < 0x20 && ch != '\t', ch >= 0xd800 && ch < 0xe000, ch == 0xfffe, ch == 0xffff, ch == utf8.RuneError:
			b = append(b, "\ufffd"...)
		default:
			b = utf8.AppendRune(b, ch)
		}
	}
	return b
}
