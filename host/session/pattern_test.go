package session

import (
	"container/list"
	"fmt"
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"testing"
)

// The until-pattern cache keeps the patterns in use: the least recently
// used one makes room for a new one (it dropped one at random, possibly
// the prompt every call waits for).
func TestPatternCacheIsLRU(t *testing.T) {
	c := patternCache{m: make(map[string]*list.Element)}
	ps := make([]*Pattern, maxCachedPatterns+1)
	for i := range ps {
		ps[i] = &Pattern{}
	}
	for i := range maxCachedPatterns {
		c.put(fmt.Sprint("p", i), ps[i])
	}
	if c.get("p0") != ps[0] {
		t.Fatal("p0 not cached")
	}
	c.put("new", ps[maxCachedPatterns])
	if c.get("p1") != nil {
		t.Error("p1, the least recently used, is still cached")
	}
	for i := range maxCachedPatterns {
		if i != 1 && c.get(fmt.Sprint("p", i)) != ps[i] {
			t.Errorf("p%d was dropped", i)
		}
	}
	if c.get("new") != ps[maxCachedPatterns] || c.lru.Len() != maxCachedPatterns || len(c.m) != maxCachedPatterns {
		t.Errorf("cache holds %d/%d", c.lru.Len(), len(c.m))
	}
}

// A pattern without a repetition count ({n}) is compiled without being
// parsed for its size first when it is short: such a pattern cannot reach
// MaxPatternInsts, as its size estimate is at most 2*len+1.
func TestShortPatternBound(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	atoms := []string{"a", "é", ".", `\d`, `\pL`, "[a-z]", "[^#$]", "(a)", "(?:b|)", "(x*)+", "(?i)", "|", "*", "+", "?", "*?", "^", "$", `\b`, `\r?\n`, `\Q.\E`, "()", "||"}
	checked := 0
	for range 5000 {
		var b strings.Builder
		n := 1 + r.IntN(shortPattern)
		for b.Len() < n {
			b.WriteString(atoms[r.IntN(len(atoms))])
		}
		expr := b.String()
		if len(expr) > shortPattern {
			expr = expr[:shortPattern]
		}
		parsed, err := syntax.Parse(expr, syntax.Perl)
		if err != nil {
			continue
		}
		checked++
		if size := progSize(parsed); size > 2*len(expr)+1 || size > MaxPatternInsts {
			t.Fatalf("%q (%d bytes): size %d", expr, len(expr), size)
		}
	}
	if checked < 200 {
		t.Fatalf("only %d valid patterns", checked)
	}
	for _, e := range []string{"(", "a)", `\`, "[z-a]"} {
		_, err := CompilePattern(e)
		_, slow := syntax.Parse(e, syntax.Perl)
		if err == nil || slow == nil || err.Error() != "not a valid regular expression: "+slow.Error() {
			t.Errorf("%q: %v, want the parser's %v", e, err, slow)
		}
	}
}
