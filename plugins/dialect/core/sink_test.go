package core

import (
	"fmt"
	"strings"
)

// recorder is a Sink that keeps what it gets: the bytes toward the user
// and the peer, and each event as "type key=value ..." (the keys name,
// dialect, hostname, mode, submode, prompt, field, text, pages, answered,
// confident, in that order, as they appear in the plugin's JSON) with the
// length of the user bytes before it.
type recorder struct {
	user   strings.Builder
	peer   strings.Builder
	events []string
	at     []int
	calls  int // User calls
}

func (r *recorder) User(p []byte) { r.user.Write(p); r.calls++ }
func (r *recorder) Peer(p []byte) { r.peer.Write(p) }
func (r *recorder) ev(s string) {
	r.events = append(r.events, s)
	r.at = append(r.at, r.user.Len())
}
func (r *recorder) Prompt(p Prompt) {
	r.ev(fmt.Sprintf("prompt dialect=%s hostname=%s mode=%s submode=%s prompt=%s", p.Dialect, p.Hostname, p.Mode, p.Submode, p.Prompt))
}
func (r *recorder) Done() { r.ev("done") }
func (r *recorder) Pager(p Pager) {
	s := fmt.Sprintf("pager text=%s pages=%d", p.Text, p.Pages)
	if !p.Answered {
		s += " answered=false"
	}
	r.ev(s)
}
func (r *recorder) PagerLimit(p PagerLimit) { r.ev(fmt.Sprintf("pager_limit pages=%d", p.Pages)) }
func (r *recorder) Question(t string)       { r.ev("question text=" + t) }
func (r *recorder) Login(f string)          { r.ev("login field=" + f) }
func (r *recorder) Error(t string)          { r.ev("error text=" + t) }
func (r *recorder) Dialect(d Detection) {
	r.ev(fmt.Sprintf("dialect name=%s confident=%v", d.Name, d.Confident))
}

// countSink counts what a benchmark's scanner reports.
type countSink struct {
	discard
	user, pagers, done int
}

func (c *countSink) User(p []byte) { c.user += len(p) }
func (c *countSink) Pager(Pager)   { c.pagers++ }
func (c *countSink) Done()         { c.done++ }

func feed(sc *Scanner, p []byte, s *countSink) { sc.Inbound(p, s) }
