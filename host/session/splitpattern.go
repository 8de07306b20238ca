package session

import (
	"bytes"
	"regexp"
	"strings"
	"unicode/utf8"
)

// A pattern that begins with plain text — "\nmarker\r?\n.*[#$] $", the
// shape of an agent's marker wait — is matched as that text and the rest:
// every match of lit+rest starts at an occurrence of lit, and is lit
// followed by rest's anchored match right after it, so finding lit
// (bytes.Index) and trying `\A(?:rest)` there finds the same matches as
// the whole pattern. The rest is compiled once and shared: an agent's
// markers differ in their text, not in the rest, and a new until pattern
// otherwise paid a full compile (parse, program, 4-5 KB of garbage) on
// every round trip (issue 19). A split is made only where it is exact (see
// splitPattern); anything else is compiled whole, as before.

// minSplitLit is the shortest leading text worth splitting off: a short
// one occurs often, and every occurrence costs an anchored try.
const minSplitLit = 3

// maxSplitTries bounds the anchored tries of one match call; past it the
// whole pattern is compiled and used. An anchored try costs at most what
// the whole pattern costs on the window, so output that repeats the
// leading text makes a match call cost at most maxSplitTries+1 times the
// window's budget (patternWindow), not more. A marker occurs once or twice
// (the command's echo, its output).
const maxSplitTries = 4

// splitPattern splits expr into its leading plain text and the rest, or
// reports that it cannot be split exactly. The rest must not depend on
// where it starts (no ^, \A, \b, \B), must not hold an alternation at its
// top level (a|b would split as "a" then "|b"), and must be simple enough
// to scan here (no \Q quoting, no POSIX classes).
// lit is a slice of its own.
func splitPattern(expr string) (lit []byte, rest string, ok bool) {
	// The leading text: plain characters, and escapes that stand for one
	// (\n, \r, \t, \f, \v, an escaped punctuation character). A
	// quantifier after it takes its last character (or escape) into the
	// rest.
	text := make([]byte, 0, len(expr))
	i, last, lastLen := 0, 0, 0
	for i < len(expr) {
		c := expr[i]
		if c == '\\' {
			if i+1 >= len(expr) {
				break
			}
			d, ok := escapedChar(expr[i+1])
			if !ok {
				break
			}
			last, lastLen = i, 1
			text = append(text, d)
			i += 2
			continue
		}
		if strings.IndexByte(`.+*?()|[]{}^$`, c) >= 0 {
			break
		}
		_, n := utf8.DecodeRuneInString(expr[i:])
		last, lastLen = i, n
		text = append(text, expr[i:i+n]...)
		i += n
	}
	if i < len(expr) && strings.IndexByte(`?*+{`, expr[i]) >= 0 && len(text) > 0 {
		// The last character is the quantifier's operand: it belongs to
		// the rest.
		text = text[:len(text)-lastLen]
		i = last
	}
	rest = expr[i:]
	if len(text) < minSplitLit || !utf8.Valid(text) {
		return nil, "", false
	}
	if strings.Contains(rest, `\Q`) || strings.Contains(rest, "[:") {
		return nil, "", false
	}
	depth, inClass := 0, false
	for j := 0; j < len(rest); j++ {
		c := rest[j]
		switch {
		case c == '\\':
			if j+1 < len(rest) && strings.IndexByte("AbB", rest[j+1]) >= 0 {
				return nil, "", false
			}
			j++ // the escaped character
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
			// A ] first in the class (after an optional ^) is literal.
			if j+1 < len(rest) && rest[j+1] == '^' {
				j++
			}
			if j+1 < len(rest) && rest[j+1] == ']' {
				j++
			}
		case c == '^':
			return nil, "", false
		case c == '(':
			depth++
		case c == ')':
			if depth--; depth < 0 {
				return nil, "", false // `\A(?:` + rest + `)` would balance it
			}
		case c == '|' && depth == 0:
			return nil, "", false
		}
	}
	if depth != 0 || inClass {
		return nil, "", false
	}
	return text, rest, true
}

// escapedChar is the character \c stands for, when it stands for one
// character that is matched as itself.
func escapedChar(c byte) (byte, bool) {
	switch c {
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	case 'f':
		return '\f', true
	case 'v':
		return '\v', true
	}
	if c < 0x80 && strings.IndexByte(`\.+*?()|[]{}^$#&-~ !"%',/:;<=>@_`+"`", c) >= 0 {
		return c, true
	}
	return 0, false
}

// splitMatch says whether lit followed by rest (anchored) matches in b.
// It gives up (decided false) after maxSplitTries occurrences of lit.
func (p *Pattern) splitMatch(b []byte) (matched, decided bool) {
	off := 0
	for tries := 0; ; tries++ {
		i := bytes.Index(b[off:], p.litB)
		if i < 0 {
			return false, true
		}
		if tries == maxSplitTries {
			return false, false
		}
		q := off + i + len(p.lit)
		if p.rest == nil || p.rest.Match(b[q:]) {
			return true, true
		}
		off += i + 1
	}
}

// splitFind is FindStringIndex for a split pattern.
func (p *Pattern) splitFind(s string) (loc []int, decided bool) {
	off := 0
	for tries := 0; ; tries++ {
		i := strings.Index(s[off:], p.lit)
		if i < 0 {
			return nil, true
		}
		if tries == maxSplitTries {
			return nil, false
		}
		start := off + i
		q := start + len(p.lit)
		if p.rest == nil {
			return []int{start, q}, true
		}
		if m := p.rest.FindStringIndex(s[q:]); m != nil {
			return []int{start, q + m[1]}, true
		}
		off = start + 1
	}
}

// whole is the whole pattern compiled, made on first need (a split
// pattern that gave up, String of one).
func (p *Pattern) whole() *regexp.Regexp {
	if re := p.full.Load(); re != nil {
		return re
	}
	re := regexp.MustCompile(p.expr) // valid: its rest compiled
	p.full.Store(re)
	return re
}
