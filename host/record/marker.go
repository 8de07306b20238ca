package record

import (
	"strconv"
	"strings"

	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/sdk/abi"
)

// maxLabel bounds a marker's text from a peer (a question, a prompt).
const maxLabel = 200

// Marker is the label of the marker a session event leaves in a
// recording, "" for an event that leaves none: prompts (with the last
// command's exit code, or a device's prompt text), finished commands'
// exit codes, pagers answered, questions, login fields, a device's error
// lines and exits.
func Marker(e *session.Event) string {
	switch b := e.Body.(type) {
	case *abi.Prompt:
		l := "prompt"
		if b.ExitCode != nil {
			l += " exit=" + strconv.Itoa(*b.ExitCode)
		}
		if b.Prompt != "" {
			l += ": " + clip(b.Prompt)
		}
		return l
	case *abi.Done:
		if b.ExitCode != nil {
			return "done exit=" + strconv.Itoa(*b.ExitCode)
		}
	case *abi.Pager:
		if b.Answered {
			return "pager answered: " + clip(b.Text)
		}
		return "pager: " + clip(b.Text)
	case *abi.PagerLimit:
		return "pager limit: " + strconv.Itoa(b.Pages) + " pages"
	case *abi.Question:
		return "question: " + clip(b.Text)
	case *abi.Login:
		return "login: " + clip(b.Field)
	case *abi.Error:
		if b.Text != "" {
			return "error: " + clip(b.Text)
		}
		if b.Message != "" {
			return "error: " + clip(b.Message)
		}
	case *abi.Exit:
		if b.Code != nil {
			return "exit " + strconv.Itoa(*b.Code)
		}
		if b.Signal != "" {
			return "exit " + clip(b.Signal)
		}
	}
	return ""
}

// clip bounds a label's text and keeps it on one line.
func clip(s string) string {
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s))
	if len(s) > maxLabel {
		cut := maxLabel
		for cut > 0 && s[cut]&0xc0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
