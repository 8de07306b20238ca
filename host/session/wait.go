package session

import (
	"bytes"
	"container/list"
	"context"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/termhost/termhost/host/ansi"
	"github.com/termhost/termhost/sdk/abi"
)

// Reason says why a wait returned (SPEC SES-7).
type Reason string

const (
	ReasonImmediate Reason = "immediate" // no wait was asked for
	ReasonMatched   Reason = "matched"
	ReasonPrompt    Reason = "prompt"
	ReasonIdle      Reason = "idle"
	ReasonExit      Reason = "exit"
	ReasonEOF       Reason = "eof"
	ReasonTimeout   Reason = "timeout"
	ReasonStable    Reason = "stable" // no output for WaitSpec.Stable
)

// WaitSpec is what to wait for; any satisfied condition ends the wait.
type WaitSpec struct {
	Until   *Pattern      // matches new output (escape sequences ignored)
	Prompt  bool          // a plugin marked a prompt the reader has not seen
	Idle    time.Duration // quiet this long after at least one new byte
	Exit    bool          // the peer went away / the process exited
	Timeout time.Duration // overall limit; clamped to the server ceiling
	// Stable: no new output for this long, counted from the later of the
	// last output and the start of the wait (the screen has settled).
	Stable time.Duration
	// Check is an extra condition (e.g. a pattern on the rendered
	// screen), tried at the start and after every change; true ends the
	// wait with ReasonMatched. It runs without any of the session's locks.
	Check func() bool
	// Poll, with Check, also tries Check when this long passed since the
	// last try without any change (a condition that depends on quiet).
	Poll time.Duration
	// Released: no person holds the keyboard (human.go); ends the wait
	// with ReasonReleased.
	Released bool
}

// Empty says whether nothing at all is waited for.
func (w WaitSpec) Empty() bool {
	return w.Until == nil && !w.Prompt && w.Idle <= 0 && !w.Exit && w.Timeout <= 0 &&
		w.Stable <= 0 && w.Check == nil && !w.Released
}

// Limits of an until pattern: its text, and the program it compiles to.
// Matching costs up to (program size) x (text scanned), so the program
// bounds the cost of every byte.
const (
	MaxPatternLen   = 1024
	MaxPatternInsts = 1000
)

// Pattern is a compiled until pattern with its matching budget.
type Pattern struct {
	re     *regexp.Regexp // nil for a split pattern (splitpattern.go)
	window int            // bytes matched per regexp call

	// A split pattern: its leading text and the rest, `\A(?:rest)`
	// compiled (nil when the pattern is all text); full is the whole
	// pattern, compiled when first needed.
	expr string
	lit  string
	litB []byte
	rest *regexp.Regexp
	full atomic.Pointer[regexp.Regexp]
}

// Match reports whether the pattern matches b.
func (p *Pattern) Match(b []byte) bool {
	if p.re == nil {
		if m, ok := p.splitMatch(b); ok {
			return m
		}
		return p.whole().Match(b)
	}
	return p.re.Match(b)
}

// patterns caches compiled until patterns: agents wait for the same few
// prompts over and over, and compiling one costs more than matching it.
// The least recently used one makes room for a new one.
var patterns = patternCache{m: make(map[string]*list.Element)}

const maxCachedPatterns = 256

type patternCache struct {
	sync.Mutex
	m   map[string]*list.Element // of *cachedPattern
	lru list.List                // front: the most recently used
}

type cachedPattern struct {
	expr string
	p    *Pattern
}

func (c *patternCache) get(expr string) *Pattern { return cached(c, expr) }

// cached is the pattern the cache holds for expr, a string or its bytes
// (looked up without building a string), or nil.
func cached[T string | []byte](c *patternCache, expr T) *Pattern {
	c.Lock()
	defer c.Unlock()
	e := c.m[string(expr)]
	if e == nil {
		return nil
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cachedPattern).p
}

func (c *patternCache) put(expr string, p *Pattern) {
	c.Lock()
	defer c.Unlock()
	if e := c.m[expr]; e != nil {
		c.lru.MoveToFront(e)
		return
	}
	if c.lru.Len() >= maxCachedPatterns {
		old := c.lru.Back()
		c.lru.Remove(old)
		delete(c.m, old.Value.(*cachedPattern).expr)
	}
	c.m[expr] = c.lru.PushFront(&cachedPattern{expr: expr, p: p})
}

// CompilePattern compiles an until pattern (Go RE2 syntax), refusing one
// longer than MaxPatternLen or compiling to more than MaxPatternInsts
// instructions (a{1000} is small to write and large to run). Compiled
// patterns are cached (a Pattern is safe for concurrent use).
//
// A pattern that begins with plain text (an agent's marker) is not cached:
// it is built from that text and its rest, which is compiled and cached on
// its own, for less than the cache's lock and bookkeeping cost; and markers
// are new with every round trip, so caching them would push out of the
// cache the prompts and rests it is there for.
func CompilePattern(expr string) (*Pattern, error) {
	if p, ok := compileSplit(expr); ok {
		return p, nil
	}
	if p := patterns.get(expr); p != nil {
		return p, nil
	}
	p, err := compileRegexp(expr)
	if err != nil {
		return nil, err
	}
	patterns.put(expr, p)
	return p, nil
}

// MatchString reports whether the pattern matches s (a rendered screen).
func (p *Pattern) MatchString(s string) bool {
	if p.re == nil {
		return p.FindStringIndex(s) != nil
	}
	return p.re.MatchString(s)
}

// FindStringIndex is the span of the leftmost match in s, or nil.
func (p *Pattern) FindStringIndex(s string) []int {
	if p.re == nil {
		if loc, ok := p.splitFind(s); ok {
			return loc
		}
		return p.whole().FindStringIndex(s)
	}
	return p.re.FindStringIndex(s)
}

// shortPattern is the length up to which a pattern without a repetition
// count ({n}) cannot reach MaxPatternInsts: every node of its syntax
// tree takes at least one character but the concatenations and
// alternations around them, so it has at most 2*len+1 nodes
// (TestShortPatternBound). Such a pattern is parsed once, by
// regexp.Compile, not also for its size: every new until pattern of a
// round trip under load paid for two parses (issue 19).
const shortPattern = (MaxPatternInsts - 1) / 2

// compileRegexp compiles expr as one regexp, within the bounds.
func compileRegexp(expr string) (*Pattern, error) {
	if len(expr) > MaxPatternLen {
		return nil, fmt.Errorf("%d bytes long; at most %d", len(expr), MaxPatternLen)
	}
	if len(expr) <= shortPattern && strings.IndexByte(expr, '{') < 0 {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("not a valid regular expression: %v", err)
		}
		return &Pattern{re: re, window: patternWindow(2*len(expr) + 1)}, nil
	}
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("not a valid regular expression: %v", err)
	}
	if n := progSize(parsed); n > MaxPatternInsts {
		return nil, fmt.Errorf("too complex: it compiles to about %d instructions, at most %d (repetition counts such as {500} multiply)", n, MaxPatternInsts)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("not a valid regular expression: %v", err)
	}
	return &Pattern{re: re, window: patternWindow(progSize(parsed))}, nil
}

// compileSplit builds a pattern that begins with plain text as that text
// and its rest (splitPattern), the rest compiled once and shared by every
// pattern with the same rest. ok is false for any other pattern, and for
// one whose rest does not compile: the whole pattern then says why.
func compileSplit(expr string) (p *Pattern, ok bool) {
	if len(expr) > shortPattern || strings.IndexByte(expr, '{') >= 0 {
		return nil, false
	}
	lit, rest, ok := splitPattern(expr)
	if !ok {
		return nil, false
	}
	p = &Pattern{expr: expr, lit: string(lit), litB: lit, window: patternWindow(2*len(expr) + 1)}
	if rest == "" {
		return p, true
	}
	// The rest is anchored and compiled as a pattern of its own, which
	// the cache usually holds (a marker's rest is the prompt's): looked up
	// by its bytes first, so a hit builds no string.
	var kb [128]byte
	key := append(append(append(kb[:0], `\A(?:`...), rest...), ')')
	r := cached(&patterns, key)
	if r == nil {
		var err error
		if r, err = CompilePattern(string(key)); err != nil {
			return nil, false
		}
	}
	if r.re == nil {
		return nil, false
	}
	p.rest = r.re
	return p, true
}

// patternWindow is how many bytes one regexp call of a pattern of about
// size instructions matches: about 4M instruction-steps at worst, so a
// wait notices its deadline or cancellation within a few milliseconds.
func patternWindow(size int) int {
	return min(max((4<<20)/max(size, 1), 4<<10), 256<<10)
}

// progSize estimates, from the parsed pattern, how many instructions it
// compiles to (within a quarter, tested): about one per node and literal
// character, with a repetition's body counted as many times as the
// compiler unrolls it. Parsing is a fraction of compiling, and regexp
// compiles the pattern anyway. The estimate is capped, so a nested
// repetition cannot overflow it.
func progSize(re *syntax.Regexp) int {
	const huge = 1 << 20
	n := 1
	switch re.Op {
	case syntax.OpLiteral:
		return max(len(re.Rune), 1)
	case syntax.OpRepeat:
		sub := 0
		for _, s := range re.Sub {
			sub += progSize(s)
		}
		// x{n,m}: n copies, then m-n optional ones (each a copy and a
		// branch); x{n,}: n copies and a loop.
		size := re.Min * sub
		if re.Max < 0 {
			size += sub + 1
		} else {
			size += (re.Max - re.Min) * (sub + 1)
		}
		return min(n+size, huge)
	}
	for _, s := range re.Sub {
		n += progSize(s)
	}
	return min(n, huge)
}

// MustCompilePattern is CompilePattern for tests and constants.
func MustCompilePattern(expr string) *Pattern {
	p, err := CompilePattern(expr)
	if err != nil {
		panic(err)
	}
	return p
}

func (p *Pattern) String() string {
	if p.re == nil {
		return p.expr
	}
	return p.re.String()
}

// matcher matches a Pattern against a reader's new output incrementally:
// each byte is matched again only within the overlap a match may span
// across the previous window (half a window).
type matcher struct {
	p       *Pattern
	scanned uint64 // output before this offset has been matched without success
}

// match looks for the pattern in [from, head), starting where the last
// look left off (less the overlap). It stops early when stop says so.
func (m *matcher) match(s *Session, from, head uint64, stop func() bool) bool {
	overlap := uint64(m.p.window / 2)
	start := from
	if m.scanned > from+overlap {
		start = m.scanned - overlap
	}
	for start < head {
		end := min(head, start+uint64(m.p.window))
		raw, _, evicted := s.buf.Read(start, int(end-start))
		winStart := start + evicted
		if winStart > from && evicted == 0 {
			// Start the window at a line start where one is near, so ^
			// anchors at a real line start, not in the middle of a line.
			if i := bytes.IndexByte(raw[:min(len(raw), int(overlap))], '\n'); i >= 0 {
				raw = raw[i+1:]
			}
		}
		if m.p.Match(ansi.Strip(raw)) {
			return true
		}
		m.scanned = end
		if end == head || stop() {
			return false
		}
		start = end - min(overlap, end-from)
	}
	return false
}

// WaitCeiling is the timeout a wait asking for d actually gets: d clamped
// to the server's ceiling (which is also the default).
func (s *Session) WaitCeiling(d time.Duration) time.Duration {
	if d <= 0 || d > s.cfg.MaxWait {
		return s.cfg.MaxWait
	}
	return d
}

// utf8Hold is how long, by default, a read holds back the incomplete last
// character of the output, waiting for its remaining bytes; after that
// quiet time (or once the session ended) the bytes are delivered as they
// are (Config.UTF8Hold).
const utf8Hold = 2 * time.Second

// Wait blocks until spec is satisfied for the reader at cur, and returns
// why and the timeout it actually used. With utf8, an incomplete last
// character does not count as new output while it is held back.
// Cancelling ctx (e.g. MCP notifications/cancelled) stops it with ctx's
// error.
//
// A wait that ends while a person holds the keyboard (human.go) says so:
// ReasonHuman, unless it ended with the session or for the hand-back.
func (s *Session) Wait(ctx context.Context, cur Cursor, spec WaitSpec, utf8 bool) (reason Reason, used time.Duration, err error) {
	timeout := s.WaitCeiling(spec.Timeout)
	if spec.Empty() {
		return ReasonImmediate, 0, nil
	}
	defer func() {
		if err == nil && reason != ReasonExit && reason != ReasonEOF && reason != ReasonReleased {
			if _, held := s.HumanHolder(); held {
				reason = ReasonHuman
			}
		}
	}()
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	started := time.Now()
	deadline := started.Add(timeout)
	// The deadline's timer is made only when the wait first blocks: most
	// reads of an agent's round trip find what they wait for at once.
	var timer *time.Timer
	defer func() {
		if timer != nil {
			putTimer(timer)
		}
	}()
	var m *matcher
	if spec.Until != nil {
		m = &matcher{p: spec.Until}
	}
	stop := func() bool { return ctx.Err() != nil || !time.Now().Before(deadline) }
	var matchedTo uint64
	now := started // the first pass's time: a clock read less per read
	checked, checkedSeq, checkedHead := false, uint64(0), uint64(0)
	var checkedAt time.Time
	for {
		s.mu.Lock()
		ch := s.watchLocked()
		head := s.buf.Head()
		ended := s.state == StateTerminated || s.state == StateTerminating
		lastRx := s.lastRx
		prompt := spec.Prompt && s.promptAfterLocked(cur.Seq)
		seq := s.nextSeq
		released := spec.Released && s.human == ""
		s.mu.Unlock()

		avail, holdUntil := head, time.Time{}
		if utf8 && !ended && head > cur.Off {
			if k := s.incompleteTail(cur.Off, head); k > 0 && now.Sub(lastRx) < s.cfg.UTF8Hold {
				avail, holdUntil = head-uint64(k), lastRx.Add(s.cfg.UTF8Hold)
			}
		}
		if m != nil && head > cur.Off && head != matchedTo {
			matchedTo = head
			if m.match(s, cur.Off, head, stop) {
				return ReasonMatched, timeout, nil
			}
		}
		if spec.Check != nil && (!checked || head != checkedHead || seq != checkedSeq || spec.Poll > 0 && now.Sub(checkedAt) >= spec.Poll) {
			checked, checkedSeq, checkedHead, checkedAt = true, seq, head, now
			if spec.Check() {
				return ReasonMatched, timeout, nil
			}
		}
		if prompt {
			return ReasonPrompt, timeout, nil
		}
		if released {
			return ReasonReleased, timeout, nil
		}
		if ended {
			if spec.Exit {
				return ReasonExit, timeout, nil
			}
			return ReasonEOF, timeout, nil
		}
		if err := ctx.Err(); err != nil {
			return "", timeout, err
		}
		if !now.Before(deadline) {
			return ReasonTimeout, timeout, nil
		}
		var wake time.Time
		if spec.Idle > 0 && avail > cur.Off {
			quiet := now.Sub(lastRx)
			if quiet >= spec.Idle {
				return ReasonIdle, timeout, nil
			}
			wake = now.Add(spec.Idle - quiet)
		}
		if spec.Stable > 0 {
			since := lastRx
			if started.After(since) {
				since = started
			}
			quiet := now.Sub(since)
			if quiet >= spec.Stable {
				return ReasonStable, timeout, nil
			}
			if w := now.Add(spec.Stable - quiet); wake.IsZero() || w.Before(wake) {
				wake = w
			}
		}
		if spec.Check != nil && spec.Poll > 0 {
			if w := checkedAt.Add(spec.Poll); wake.IsZero() || w.Before(wake) {
				wake = w
			}
		}
		if !holdUntil.IsZero() && (wake.IsZero() || holdUntil.Before(wake)) {
			wake = holdUntil
		}
		var wakeT *time.Timer
		var wakeC <-chan time.Time
		if !wake.IsZero() {
			wakeT = getTimer(time.Until(wake))
			wakeC = wakeT.C
		}
		if timer == nil {
			timer = getTimer(time.Until(deadline))
		}
		select {
		case <-ch:
		case <-wakeC:
		case <-timer.C:
		case <-ctx.Done():
		}
		if wakeT != nil {
			putTimer(wakeT)
		}
		now = time.Now()
	}
}

// timers are stopped timers for waits to reuse: a wait that blocks needs
// one (two with a quiet period), about one per round trip of an agent's
// loop, and a new one is three allocations. Since Go 1.23 a stopped or
// reset timer's channel holds no stale tick, so a timer from the pool
// fires only for its new duration.
var timers sync.Pool

func getTimer(d time.Duration) *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func putTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}

// promptAfterLocked says whether a prompt event came after sequence number
// seq. Caller holds mu.
func (s *Session) promptAfterLocked(seq uint64) bool {
	for i := len(s.events) - 1; i >= 0 && s.events[i].Seq > seq; i-- {
		if _, ok := s.events[i].Body.(*abi.Prompt); ok {
			return true
		}
	}
	return false
}

// incompleteTail is the length of an incomplete UTF-8 sequence at the end
// of [from, head), or 0.
func (s *Session) incompleteTail(from, head uint64) int {
	start := max(from, head-min(head, utf8.UTFMax))
	p, _, _ := s.buf.Read(start, int(head-start))
	return len(p) - utf8Cut(p)
}

// ReadOptions control a read (Reader.Read).
type ReadOptions struct {
	Wait     WaitSpec
	MaxBytes int  // <= 0: 64 KiB
	UTF8     bool // never split a multi-byte character across reads
	Peek     bool // do not advance the reader
}

// ReadResult is what a read returns.
type ReadResult struct {
	Data      []byte
	Reason    Reason
	TimeoutMs int64
	Evicted   uint64 // bytes lost to eviction before they were read
	Lost      bool   // the reader was made anew at the end of the output after readers were dropped (reader.go)
	HasMore   bool   // more unread bytes remain (MaxBytes was reached, or a character is incomplete)
	Events    []Event
	Alive     bool
}

// DefaultMaxBytes is what a read returns at most when it names no bound
// (and what a command's output is cut at: host/device).
const DefaultMaxBytes = 64 << 10

const defaultMaxBytes = DefaultMaxBytes

// readFrom waits per opts.Wait, then returns r's new output since its
// last read, with the events that came with it (including any at the very
// offset the last read ended at), and advances r past them. Reads of one
// session are serialized: a second read waits for the first to finish,
// then waits for output new to its reader.
//
// A read always makes progress: with UTF8 it returns a whole character even
// past MaxBytes, and an incomplete last character once the peer has been
// quiet for two seconds or has gone.
func (s *Session) readFrom(ctx context.Context, r *Reader, opts ReadOptions) (ReadResult, error) {
	timeout := s.WaitCeiling(opts.Wait.Timeout)
	if opts.Wait.Empty() {
		timeout = s.cfg.WriteTimeout
	}
	if err := s.lockRead(ctx, timeout); err != nil {
		return ReadResult{}, err
	}
	defer func() { <-s.readSem }()
	s.mu.Lock()
	cur, lost := r.read, r.lost
	s.mu.Unlock()
	reason, used, err := s.Wait(ctx, cur, opts.Wait, opts.UTF8)
	if err != nil {
		return ReadResult{}, err
	}
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = defaultMaxBytes
	}
	raw, _, evicted := s.buf.Read(cur.Off, limit+utf8.UTFMax)
	start := cur.Off + evicted
	head := s.buf.Head()

	now := time.Now() // one clock read for the hold and the activity time
	s.mu.Lock()
	defer s.mu.Unlock()
	alive := s.state != StateTerminated && s.state != StateTerminating
	n := min(len(raw), limit)
	if opts.UTF8 {
		switch {
		case n < len(raw):
			n = wholeRune(raw, n)
		case alive && now.Sub(s.lastRx) < s.cfg.UTF8Hold:
			n = utf8Cut(raw[:n])
		}
	}
	next := start + uint64(n)
	res := ReadResult{
		Data: raw[:n], Reason: reason, TimeoutMs: used.Milliseconds(), Evicted: evicted,
		HasMore: next < head, Alive: alive, Lost: lost,
	}
	seq := cur.Seq
	for _, e := range s.events {
		if e.Seq > cur.Seq && e.Offset <= next {
			res.Events = append(res.Events, e)
			seq = e.Seq
		}
	}
	if !opts.Peek {
		r.read, r.lost = Cursor{Off: next, Seq: seq}, false
	}
	s.touchLocked(now)
	return res, nil
}

// lockRead takes the session's read lock, waiting at most timeout (plus a
// moment) or until ctx ends.
func (s *Session) lockRead(ctx context.Context, timeout time.Duration) error {
	select {
	case s.readSem <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(timeout + time.Second)
	defer t.Stop()
	select {
	case s.readSem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("%w: another read of this session has been waiting for longer than %v", ErrBusy, timeout)
	}
}

// wholeRune moves a cut at n (inside p) to the end of the character it
// falls in, when p holds all of it; an invalid byte is a character of its
// own.
func wholeRune(p []byte, n int) int {
	for back := 1; back <= utf8.UTFMax && back <= n; back++ {
		c := p[n-back]
		if c < utf8.RuneSelf {
			return n
		}
		if !utf8.RuneStart(c) {
			continue
		}
		r, size := utf8.DecodeRune(p[n-back:])
		if r == utf8.RuneError && size <= 1 {
			return n // not a valid character: cut anywhere
		}
		return max(n, n-back+size)
	}
	return n
}

// utf8Cut returns the length of p without a trailing incomplete UTF-8
// sequence (the start of a character whose remaining bytes have not come;
// an invalid sequence is not incomplete).
func utf8Cut(p []byte) int {
	for back := 1; back <= utf8.UTFMax && back <= len(p); back++ {
		c := p[len(p)-back]
		if c < utf8.RuneSelf {
			return len(p) // ASCII: nothing pending
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(p[len(p)-back:]) {
				return len(p) - back
			}
			return len(p)
		}
	}
	return len(p)
}
