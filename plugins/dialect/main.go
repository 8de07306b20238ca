// Command dialect is termhost's device-dialect plugin (SPEC DEV-1, PLG-5).
// It sits after the protocol plugin and passes the device's bytes on
// toward the user, with events placed right after the bytes they concern
// (one JSON object each):
//
//	{"type":"prompt","source":"dialect","dialect":"cisco_ios","hostname":"R1","mode":"config","submode":"config-if","prompt":"R1(config-if)#"}
//	{"type":"done","source":"dialect"}             after a prompt that follows a command
//	{"type":"pager","text":"--More--","pages":3}   answered (to_peer) and removed, with its erase sequence
//	{"type":"pager_limit","pages":1000}            the bound was reached: no more answers this command
//	{"type":"question","text":"Proceed with reload? [confirm]"}   never answered
//	{"type":"login","field":"username|password|enable"}
//	{"type":"error","text":"% Invalid input detected at '^' marker."}
//	{"type":"dialect","name":"huawei","detected":true,"confident":false}
//
// Control requests (on_control): {"op":"dialect","name":"…"} forces a
// dialect; {"op":"pager","maxPages":N,"auto":bool}; {"op":"info"} (the
// dialect, the last prompt's mode, a pending login field or question, and
// the dialect's mode commands, which the host's set_mode follows);
// {"op":"command"} marks the next line sent as a command whose pagers are
// answered, and replies as info. Session options: {"dialect":"…",
// "maxPages":N,"pager":bool,"commandPagers":bool} (commandPagers: pagers
// are answered only for lines marked by "command"). The pattern tables
// are data: core/dialects/*.json (see README.md).
//
// The core reports to a typed Sink; this file implements it and emits
// sdk/abi's typed events (ABI 1.1: prompts and done say "source":
// "dialect"); testdata/wire.golden pins the bytes.
package main

import (
	"encoding/json"
	"errors"

	"github.com/termhost/termhost/plugins/dialect/core"
	"github.com/termhost/termhost/sdk"
	"github.com/termhost/termhost/sdk/abi"
)

func init() { sdk.Register(newSession) }

func main() {}

// quiet: a partial line held back (it may yet become a pager prompt) is
// released after this long without more input.
const quietMs = 300

type session struct {
	sc     *core.Scanner
	heldAt int64 // when bytes began to be held, Unix ms; 0 if none
	sink   sink
}

type options struct {
	Dialect  string `json:"dialect"`
	MaxPages *int   `json:"maxPages"`
	Pager    *bool  `json:"pager"`
	// CommandPagers: answer pagers only for commands armed by the
	// "command" op (the host's run_command).
	CommandPagers bool `json:"commandPagers"`
}

func newSession(o sdk.Open) (sdk.Session, error) {
	s := &session{sc: core.New()}
	if len(o.Options) > 0 {
		var opt options
		if err := json.Unmarshal(o.Options, &opt); err != nil {
			return nil, err
		}
		if opt.Dialect != "" {
			if err := s.sc.Force(opt.Dialect); err != nil {
				return nil, err
			}
		}
		info := s.sc.Info()
		if opt.MaxPages != nil {
			if *opt.MaxPages < 0 {
				return nil, errors.New("maxPages must not be negative")
			}
			info.MaxPages = *opt.MaxPages
		}
		if opt.Pager != nil {
			info.Auto = *opt.Pager
		}
		s.sc.SetPager(info.MaxPages, info.Auto)
		s.sc.CommandPagers(opt.CommandPagers)
	}
	return s, nil
}

func (s *session) Data(out *sdk.Out, dir sdk.Dir, p []byte) sdk.Action {
	if dir == sdk.Outbound {
		s.sc.Outbound(p)
		return sdk.Continue
	}
	k := &s.sink
	k.out = out
	plain := s.sc.Inbound(p, k)
	if s.sc.Held() {
		if s.heldAt == 0 {
			s.heldAt = sdk.NowMs()
		}
	} else {
		s.heldAt = 0
	}
	if plain {
		// p went to User whole and alone: the host passes it on as it is.
		k.first = nil
		return sdk.Continue
	}
	k.flush()
	return sdk.Consumed
}

// sink serialises what the core reports into emissions. The first run of
// bytes toward the user is kept (not copied) until something follows it,
// so that a chunk the core passed on whole costs no emission: Data
// answers Continue instead.
type sink struct {
	out   *sdk.Out
	first []byte
}

func (k *sink) flush() {
	if k.first != nil {
		k.out.ToUser(k.first)
		k.first = nil
	}
}

func (k *sink) User(p []byte) {
	if k.first == nil {
		k.first = p
		return
	}
	k.flush()
	k.out.ToUser(p)
}

func (k *sink) Peer(p []byte) {
	k.flush()
	k.out.ToPeer(p)
}

// event writes one event (sdk/abi's typed events, ABI 1.1).
func (k *sink) event(e abi.Payload) {
	k.flush()
	k.out.Emit(e)
}

func (k *sink) Prompt(p core.Prompt) {
	k.event(abi.Prompt{Source: abi.SourceDialect, Cwd: p.Cwd, Dialect: p.Dialect, Hostname: p.Hostname,
		Mode: p.Mode, Prompt: p.Prompt, Submode: p.Submode, User: p.User})
}

func (k *sink) Done() { k.event(abi.Done{Source: abi.SourceDialect}) }

func (k *sink) Pager(p core.Pager) {
	k.event(abi.Pager{Pages: p.Pages, Text: p.Text, Answered: p.Answered})
}

func (k *sink) PagerLimit(p core.PagerLimit) {
	k.event(abi.PagerLimit{Pages: p.Pages, Quit: p.Quit})
}

func (k *sink) Question(text string) { k.event(abi.Question{Text: text}) }

func (k *sink) Error(text string) { k.event(abi.Error{Text: text}) }

func (k *sink) Login(field string) { k.event(abi.Login{Field: field}) }

func (k *sink) Dialect(d core.Detection) {
	k.event(abi.Dialect{Name: d.Name, Detected: true, Confident: d.Confident})
}

// Tick settles held bytes once the stream has been quiet for quietMs: a
// pager waiting for a possible continuation is answered, anything else is
// released.
func (s *session) Tick(out *sdk.Out, now int64) int64 {
	if s.heldAt == 0 {
		return 0
	}
	if now-s.heldAt < quietMs {
		return s.heldAt + quietMs
	}
	k := &s.sink
	k.out = out
	s.sc.Quiet(k)
	k.flush()
	s.heldAt = 0
	return 0
}

func (s *session) Control(out *sdk.Out, req []byte) ([]byte, error) {
	var r struct {
		Op       string `json:"op"`
		Name     string `json:"name"`
		MaxPages *int   `json:"maxPages"`
		Auto     *bool  `json:"auto"`
	}
	if err := json.Unmarshal(req, &r); err != nil {
		return nil, err
	}
	switch r.Op {
	case "dialect":
		if err := s.sc.Force(r.Name); err != nil {
			return nil, err
		}
		return []byte(`{"ok":true}`), nil
	case "pager":
		info := s.sc.Info()
		if r.MaxPages != nil {
			if *r.MaxPages < 0 {
				return nil, errors.New("maxPages must not be negative")
			}
			info.MaxPages = *r.MaxPages
		}
		if r.Auto != nil {
			info.Auto = *r.Auto
		}
		s.sc.SetPager(info.MaxPages, info.Auto)
		return []byte(`{"ok":true}`), nil
	case "info":
		return json.Marshal(s.sc.Info())
	case "command":
		s.sc.ArmCommand()
		return json.Marshal(s.sc.Info())
	}
	return nil, errors.New(`unknown op (dialect, pager, info, command)`)
}

func (s *session) Close(out *sdk.Out) {
	k := &s.sink
	k.out = out
	s.sc.Flush(k)
	k.flush()
}

func (s *session) ExportState() ([]byte, error) { return s.sc.Export() }

func (s *session) ImportState(b []byte) error { return s.sc.Import(b) }
