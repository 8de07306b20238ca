// Command shell is termhost's shell-integration plugin: it removes the OSC
// 133 marks that termhost's shell start-up files print (host/link/pty/
// shell) from the stream, so no marker reaches the buffer or the screen,
// and turns them into events: "prompt" when a prompt has been drawn and
// the shell waits for input (with the exit code and duration of the
// command that just finished, when there was one), "command" when a
// command starts, "done" where its output ends. A `prompt` wait on a shell
// session therefore returns as soon as a command finishes, without
// guessing from the prompt's text.
//
// bash and zsh mark a command's start (C) and end (D;code, only after a
// command ran). POSIX sh marks only its prompt, with $? as it is drawn
// (S;code before A): whether a command ran since the last prompt is told
// from the lines typed toward the shell (marks.Typed), and the status is
// reported only then: a prompt after an empty line, the first one, or one
// drawn again carries none. Its duration runs from the Enter that sent the
// command line.
package main

import (
	"github.com/termhost/termhost/plugins/shell/marks"
	"github.com/termhost/termhost/sdk"
	"github.com/termhost/termhost/sdk/abi"
)

func init() { sdk.Register(newSession) }

func main() {}

type session struct {
	sc    marks.Scanner
	typed marks.Typed // lines typed, for a shell that marks no command (S)
	out   []byte
	ms    []marks.Mark
	start int64 // when the running command started (C), Unix ms; 0 if none
	// done is the last finished command, reported with the next prompt.
	done                *finished
	running, seenPrompt bool
	// sawStatus: a status mark (S) came; the first prompt's says nothing
	// about a command.
	sawStatus bool
	// idle: a POSIX shell's prompt is drawn and no command line was sent
	// at it yet.
	idle bool
}

type finished struct {
	code       int
	hasCode    bool
	durationMs int64
}

func newSession(sdk.Open) (sdk.Session, error) { return &session{}, nil }

func (s *session) Data(out *sdk.Out, dir sdk.Dir, p []byte) sdk.Action {
	if dir == sdk.Outbound {
		n := s.typed.Queued()
		s.typed.Feed(p, sdk.NowMs)
		if s.sawStatus && s.idle && s.typed.Queued() > n {
			// A command line sent at a POSIX shell's prompt: the shell is
			// busy until its next prompt (it marks no command of its own).
			if l, ok := s.typed.Last(); ok && l.Kind != marks.Blank {
				s.idle = false
				out.Emit(abi.Command{Source: abi.SourceShell})
			}
		}
		return sdk.Continue
	}
	s.out, s.ms = s.sc.Scan(s.out[:0], s.ms[:0], p)
	if len(s.ms) == 0 && len(s.out) == len(p) {
		return sdk.Continue // the common case: nothing to remove
	}
	at := 0
	for _, m := range s.ms {
		out.ToUser(s.out[at:m.At])
		at = m.At
		s.mark(out, m)
	}
	out.ToUser(s.out[at:])
	return sdk.Consumed
}

func (s *session) mark(out *sdk.Out, m marks.Mark) {
	now := sdk.NowMs()
	switch m.Kind {
	case 'C':
		s.running, s.start = true, now
		out.Emit(abi.Command{Source: abi.SourceShell})
	case 'D':
		f := &finished{code: m.Code, hasCode: m.HasCode}
		if s.running && s.start > 0 {
			f.durationMs = now - s.start
		}
		s.done, s.running, s.start = f, false, 0
		// Where the command's output ends (the prompt is drawn after it):
		// run_command cuts its output here.
		ev := abi.Done{Source: abi.SourceShell}
		if f.hasCode {
			ev.ExitCode = &f.code
		}
		out.Emit(ev)
	case 'S':
		// A POSIX shell's prompt starts: $? is its last command's status
		// only if the line it read ran one.
		s.done = nil
		first := !s.sawStatus
		s.sawStatus = true
		if first {
			return // lines typed before it are read after it
		}
		l, ok := s.typed.Prompt()
		if !ok || l.Kind != marks.Text || !m.HasCode {
			return
		}
		f := &finished{code: m.Code, hasCode: true}
		if l.At > 0 && now > l.At {
			f.durationMs = now - l.At
		}
		s.done = f
		ev := abi.Done{Source: abi.SourceShell, ExitCode: &f.code}
		out.Emit(ev) // before the prompt is drawn: the output ends here
	case 'B':
		ev := abi.Prompt{Source: abi.SourceShell}
		if s.done != nil {
			if s.done.hasCode {
				ev.ExitCode = &s.done.code
			}
			if s.done.durationMs > 0 || s.done.hasCode {
				ev.DurationMs = &s.done.durationMs
			}
			s.done = nil
		}
		s.seenPrompt = true
		s.idle = s.sawStatus
		out.Emit(ev)
	}
}

func (s *session) Close(out *sdk.Out) {
	// A mark cut off by the end of the stream was not one: give it back.
	if rest := s.sc.Flush(nil); len(rest) > 0 {
		out.ToUser(rest)
	}
}
