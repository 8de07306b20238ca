package session

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSplitPatternSameAsRegexp: a pattern matched as its leading text and
// the rest finds exactly what the whole pattern, compiled by regexp, finds
// (whether it matches, and where the leftmost match starts and ends), over
// random patterns and random text built from the same pieces.
func TestSplitPatternSameAsRegexp(t *testing.T) {
	lits := []string{"abc", "\nt1x2x", "ab", "a", "é€", "xyz", "#", " ", "\r\n", "-->", "a.b",
		`\nt1x2x`, `ab\.c`, `\r\n`, `x\ty`, `\$ `, `\\x`, `a\-`, `\d`, `\x41bc`, `\`}
	pieces := []string{`\r?`, `\n`, `.*`, `.+`, `[#$]`, ` `, `$`, `\s*`, `(a|b)`, `(?:ab)*`, `x?`, `[^a]`, `[]a]`, `\d+`,
		`(?i)b`, `c`, `\.`, `|`, `^`, `\b`, `(`, `)`, `[`, `\z`, `a*?`, `(?s).`, `\QA\E`, `[[:alpha:]]`, `é`, `\x41`, `\pL`}
	texts := []string{"abc", "\nt1x2x", "\r\n", "# ", "$ ", "ab", "xyz", "é€", "a", "b", "B", "\n", "12", " ", "x", "]", ".", "-->", "\xff", "\xc3", "\t", "ab.c", "\\x", "a-", "$ ", "Abc"}
	r := rand.New(rand.NewPCG(splitSeed, 19))
	split, whole := 0, 0
	for range splitCases {
		var pat strings.Builder
		pat.WriteString(lits[r.IntN(len(lits))])
		if r.IntN(4) == 0 {
			pat.WriteString(lits[r.IntN(len(lits))])
		}
		for range r.IntN(5) {
			pat.WriteString(pieces[r.IntN(len(pieces))])
		}
		expr := pat.String()
		want, werr := regexp.Compile(expr)
		got, gerr := compilePattern(expr)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: regexp says %v, compilePattern %v", expr, werr, gerr)
		}
		if werr != nil {
			continue
		}
		if got.re == nil {
			split++
		} else {
			whole++
		}
		for range 8 {
			var text strings.Builder
			for range r.IntN(12) {
				text.WriteString(texts[r.IntN(len(texts))])
			}
			s := text.String()
			if g, w := got.Match([]byte(s)), want.MatchString(s); g != w {
				t.Fatalf("%q in %q: Match %v, regexp %v", expr, s, g, w)
			}
			if g, w := got.MatchString(s), want.MatchString(s); g != w {
				t.Fatalf("%q in %q: MatchString %v, regexp %v", expr, s, g, w)
			}
			if g, w := got.FindStringIndex(s), want.FindStringIndex(s); !slices.Equal(g, w) {
				t.Fatalf("%q in %q: FindStringIndex %v, regexp %v", expr, s, g, w)
			}
		}
	}
	if split < 1000 || whole < 1000 {
		t.Fatalf("%d patterns split, %d whole: the test does not exercise both", split, whole)
	}
	t.Logf("%d patterns split, %d compiled whole", split, whole)
}

// TestSplitPatternBounded: output repeating a split pattern's leading text
// without the rest makes it fall back to the whole pattern after
// maxSplitTries tries, with the same answer.
func TestSplitPatternBounded(t *testing.T) {
	p, err := compilePattern(`abc\r?\nZ`)
	if err != nil || p.re != nil {
		t.Fatalf("not split: %v", err)
	}
	s := strings.Repeat("abc\n", 1000) + "abc\r\nZ"
	if _, decided := p.splitMatch([]byte(s)); decided {
		t.Fatal("a thousand occurrences of the text were all tried")
	}
	if !p.Match([]byte(s)) || p.full.Load() == nil {
		t.Fatal("the fallback to the whole pattern did not match")
	}
	if loc := p.FindStringIndex(s); !slices.Equal(loc, []int{4000, 4006}) {
		t.Fatalf("FindStringIndex %v", loc)
	}
	if p.String() != `abc\r?\nZ` {
		t.Fatalf("String %q", p.String())
	}
}

// TestSplitPatternRestShared: round trips' marker patterns share one
// compiled rest.
func TestSplitPatternRestShared(t *testing.T) {
	a, _ := compilePattern("\nt1x1x\\r?\\n.*[#$] $")
	b, _ := compilePattern("\nt1x2x\\r?\\n.*[#$] $")
	c, _ := compilePattern(`\nt1x3x\r?\n.*[#$] $`) // the newline as the regexp's escape
	if c.re != nil || c.rest != a.rest || c.lit != "\nt1x3x" {
		t.Fatalf("an escaped newline was not taken as text: %q %p", c.lit, c.rest)
	}
	if a.re != nil || b.re != nil || a.rest == nil || a.rest != b.rest {
		t.Fatalf("markers not split onto one rest: %p %p", a.rest, b.rest)
	}
	if !a.Match([]byte("echo t1x1x\r\r\nt1x1x\r\n# ")) || a.Match([]byte("echo t1x1x\r\r\nt1x2x\r\n# ")) {
		t.Fatal("marker pattern matched wrongly")
	}
}

var splitCases, splitSeed = 20000, uint64(1)

// FuzzSplitPattern: any pattern and text, split or not, answer as regexp.
func FuzzSplitPattern(f *testing.F) {
	f.Add("\nt1x2x\\r?\\n.*[#$] $", "echo t1x2x\r\r\nt1x2x\r\n# ")
	f.Add(`abc(d|e)+$`, "abcdeabce")
	f.Add(`ab\.c(`, "ab.c")
	f.Fuzz(func(t *testing.T, expr, s string) {
		want, werr := regexp.Compile(expr)
		got, gerr := compilePattern(expr)
		switch {
		case werr != nil && gerr == nil:
			t.Fatalf("%q: regexp refuses it (%v), compilePattern does not", expr, werr)
		case werr != nil:
			return
		case gerr != nil:
			return // too long or too complex for an until pattern
		}
		if g, w := got.FindStringIndex(s), want.FindStringIndex(s); !slices.Equal(g, w) {
			t.Fatalf("%q in %q: %v, regexp %v", expr, s, g, w)
		}
		if g, w := got.Match([]byte(s)), want.MatchString(s); g != w {
			t.Fatalf("%q in %q: Match %v, regexp %v", expr, s, g, w)
		}
	})
}

// Marker patterns, new with every round trip, are not cached: under load
// they pushed out of the cache the prompts and the shared rests it is
// there for, which were then compiled again and again.
func TestMarkersDoNotFlushPatternCache(t *testing.T) {
	const prompt = `(?m)^[\w.-]+[#>$] ?$`
	if _, err := CompilePattern(prompt); err != nil {
		t.Fatal(err)
	}
	for i := range 2 * maxCachedPatterns {
		p, err := CompilePattern("\nm" + strconv.Itoa(i) + `x\r?\n.*[#$] $`)
		if err != nil || p.re != nil {
			t.Fatalf("marker %d: %v (not split)", i, err)
		}
	}
	if patterns.get(prompt) == nil {
		t.Fatal("the prompt pattern was pushed out of the cache by markers")
	}
	if patterns.get(`\A(?:\r?\n.*[#$] $)`) == nil {
		t.Fatal("the markers' shared rest is not cached")
	}
}

// compilePattern is CompilePattern without the cache.
func compilePattern(expr string) (*Pattern, error) {
	if p, ok := compileSplit(expr); ok {
		return p, nil
	}
	return compileRegexp(expr)
}
