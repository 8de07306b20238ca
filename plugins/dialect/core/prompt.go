package core

import (
	"bytes"
	"strings"
)

// classify looks at the visible tail (after its last CR): a login field, a
// question or a prompt.
func (s *Scanner) classify(tv []byte) {
	t := bytes.TrimRight(tv, " \t")
	if len(t) == 0 || !s.tab.ends[t[len(t)-1]] {
		return
	}
	for _, l := range s.d.login {
		if l.re.Match(tv) && (l.unless == "" || !bytes.HasPrefix(tv, []byte(l.unless))) {
			field := l.field
			if field == "password" && s.st.Enable {
				field = "enable"
			}
			s.st.Classed, s.st.Secret = true, field != "username"
			s.st.Login, s.st.Question = field, ""
			s.emit.event().Login(field)
			return
		}
	}
	for _, q := range s.d.questions {
		if q.Match(tv) {
			s.st.Classed = true
			s.st.Login, s.st.Question = "", text(bytes.TrimSpace(tv))
			s.emit.event().Question(s.st.Question)
			return
		}
	}
	if s.prompt(s.d, tv) {
		return
	}
	if s.st.Forced || s.st.Level == levelConfident {
		return
	}
	s.guess(tv)
}

// classifiable: classify would report tv (a login field, a question or a
// prompt of the dialect); it reports nothing itself.
func (s *Scanner) classifiable(tv []byte) bool {
	t := bytes.TrimRight(tv, " \t")
	if len(t) == 0 || !s.tab.ends[t[len(t)-1]] {
		return false
	}
	for _, l := range s.d.login {
		if l.re.Match(tv) && (l.unless == "" || !bytes.HasPrefix(tv, []byte(l.unless))) {
			return true
		}
	}
	for _, q := range s.d.questions {
		if q.Match(tv) {
			return true
		}
	}
	_, ok := parsePrompt(s.d, tv, s.st.Hostname, s.st.Edit)
	return ok
}

// parsed is a prompt read by a dialect's patterns.
type parsed struct {
	mode, sub, host, user, cwd string
}

// parsePrompt reads tv with d's prompt patterns; known is the hostname
// seen so far (Huawei's views are split from it), subLine the sub-mode
// named by the line above (Spec.SubLine).
func parsePrompt(d *Dialect, tv []byte, known, subLine string) (parsed, bool) {
	for _, pr := range d.prompts {
		m := pr.re.FindSubmatchIndex(tv)
		if m == nil {
			continue
		}
		group := func(i int) string {
			if i < 0 || m[2*i] < 0 {
				return ""
			}
			return string(tv[m[2*i]:m[2*i+1]])
		}
		host, sub := group(pr.host), strings.TrimSpace(group(pr.sub))
		if pr.splitSub != "" {
			if known != "" && strings.HasPrefix(host, known+pr.splitSub) {
				host, sub = known, host[len(known)+len(pr.splitSub):]
			} else if host != known {
				if h, rest, ok := strings.Cut(host, pr.splitSub); ok && h != "" {
					host, sub = h, rest
				}
			}
		}
		if pr.subFromEdit {
			sub = subLine
		}
		if sub == "config" {
			sub = ""
		}
		return parsed{mode: pr.mode, sub: sub, host: host, user: group(pr.user), cwd: group(pr.cwd)}, true
	}
	return parsed{}, false
}

// prompt parses tv with d's prompt patterns and reports the prompt (and
// done, if a command awaited it).
func (s *Scanner) prompt(d *Dialect, tv []byte) bool {
	p, ok := parsePrompt(d, tv, s.st.Hostname, s.st.Edit)
	if !ok {
		return false
	}
	if s.st.Dialect == "" {
		// A prompt parsed by a table before any detection: that
		// table's dialect is the guess.
		s.detected(d, levelPrompt)
	} else if d == s.d && s.st.Level < levelPrompt {
		s.st.Level = levelPrompt
	}
	s.st.Mode, s.st.Submode, s.st.Hostname, s.st.User = p.mode, p.sub, p.host, p.user
	s.st.Prompt = string(bytes.TrimRight(tv, " \t"))
	s.st.Classed, s.st.Secret, s.st.Enable = true, false, false
	s.st.Login, s.st.Question = "", ""
	sink := s.emit.event()
	sink.Prompt(Prompt{Dialect: d.Name, Hostname: p.host, Mode: p.mode, Submode: p.sub, Prompt: s.st.Prompt, User: p.user, Cwd: p.cwd})
	if s.st.Awaiting {
		s.st.Awaiting = false
		sink.Done()
		if s.st.Counts && !s.st.Answered {
			s.st.Answered, s.st.Banner = true, nil
		}
	}
	return true
}

// subLine keeps the sub-mode named by the last complete line of body
// (Spec.SubLine: Junos shows "[edit ...]" above a configuration-mode
// prompt); a non-blank line naming none clears it.
func (s *Scanner) subLine(body []byte) {
	end := len(body) - 1
	k := bytes.LastIndexByte(body[:end], '\n')
	line := body[k+1 : end]
	if k < 0 && len(s.st.Line) > 0 && !s.st.LineOver {
		s.tmp = append(append(s.tmp[:0], s.st.Line...), line...)
		line = s.tmp
	}
	if len(line) > maxTail {
		s.st.Edit = ""
		return
	}
	for _, l := range s.d.subLines {
		i := bytes.Index(line, l.open)
		if i < 0 {
			continue
		}
		v := visible(s.vis[:0], line[i+len(l.open):], false)
		s.vis = v[:0]
		if j := bytes.Index(v, l.close); j >= 0 {
			s.st.Edit = strings.TrimSpace(string(v[:j]))
		}
		return
	}
	if len(bytes.TrimSpace(line)) > 0 {
		s.st.Edit = ""
	}
}
