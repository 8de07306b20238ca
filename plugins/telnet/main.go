// Command telnet is termhost's Telnet protocol plugin: a thin adapter that
// runs the sans-IO core in plugins/telnet/proto once per received chunk.
//
// Inbound chunks are decoded (negotiation answered toward the peer, data
// toward the user, GA/EOR surfaced as prompt events, option changes as
// option events); outbound chunks are escaped (0xFF doubled). Control
// requests: {"op":"resize","cols":C,"rows":R}, {"op":"interrupt"} (IAC IP),
// {"op":"break"} (IAC BRK), {"op":"ayt"} (IAC AYT), {"op":"options"}.
// The session's state (option states, parser state) is exported for hot
// swap and checkpointed whenever negotiation changes it.
package main

import (
	"encoding/json"
	"fmt"

	"github.com/termhost/termhost/plugins/telnet/proto"
	"github.com/termhost/termhost/sdk"
	"github.com/termhost/termhost/sdk/abi"
)

func init() { sdk.Register(newSession) }

func main() {}

type options struct {
	Term  string            `json:"term"`
	Cols  int               `json:"cols"`
	Rows  int               `json:"rows"`
	Speed string            `json:"speed"`
	Env   map[string]string `json:"env"`
}

type session struct {
	conn *proto.Conn
	sink sink
}

func newSession(o sdk.Open) (sdk.Session, error) {
	var opt options
	for _, raw := range [][]byte{o.Config, o.Options} { // session options override instance config
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &opt); err != nil {
				return nil, fmt.Errorf("telnet options: %w", err)
			}
		}
	}
	if opt.Cols < 0 || opt.Cols > 0xffff || opt.Rows < 0 || opt.Rows > 0xffff {
		return nil, fmt.Errorf("telnet options: cols/rows must be 0-65535, got %dx%d", opt.Cols, opt.Rows)
	}
	s := &session{conn: proto.New(proto.Config{
		Term: opt.Term, Cols: uint16(opt.Cols), Rows: uint16(opt.Rows), Speed: opt.Speed, Env: opt.Env,
		DropNOP: true, // keepalives are noise to an agent
	})}
	return s, nil
}

// sink turns core callbacks into emissions. Data runs are gathered and
// emitted once before the next reply or event (order is kept, and an
// IAC-dense chunk costs one emission instead of one per run). When the
// core passed a chunk through whole, nothing is emitted and Data answers
// Continue, which spares the host a copy.
type sink struct {
	out   *sdk.Out
	first []byte // the first run, not yet copied
	buf   []byte // later runs appended to a copy of the first
	runs  int
	ev    []byte // the event being emitted
	last  int    // the last prompt or command event (kind<<8|value, +1), while no data followed it; 0: none
	dirty bool   // negotiation changed state: checkpoint after the chunk
}

func (k *sink) flush() {
	switch {
	case k.runs == 1:
		k.out.ToUser(k.first)
	case k.runs > 1:
		k.out.ToUser(k.buf)
	}
	k.first, k.buf, k.runs = nil, k.buf[:0], 0
}

func (k *sink) Data(p []byte) {
	k.last = 0 // data: the next mark is news again
	switch k.runs {
	case 0:
		k.first = p
	case 1:
		k.buf = append(append(k.buf[:0], k.first...), p...)
	default:
		k.buf = append(k.buf, p...)
	}
	k.runs++
}

func (k *sink) Send(p []byte) {
	k.flush()
	k.out.ToPeer(p)
}

func (k *sink) Event(e proto.Event) {
	k.flush()
	if e.Kind == proto.EventPrompt || e.Kind == proto.EventCommand {
		// The same mark again with no data between says nothing new: a
		// peer flooding GA or AYT costs one event, not one per command.
		key := int(e.Kind)<<8 | int(e.Command) + 1
		if e.Kind == proto.EventPrompt {
			key = int(e.Kind)<<8 | int(e.Prompt) + 1
		}
		if key == k.last {
			return
		}
		k.last = key
	}
	// Events are built in a reused buffer: a peer can send a prompt mark
	// every two bytes, and an allocation each would be most of their cost.
	ev := k.ev[:0]
	switch e.Kind {
	case proto.EventOption:
		k.dirty = true
		side := "remote"
		if e.Local {
			side = "local"
		}
		ev = abi.Option{Option: proto.OptionName(e.Option), Side: side, Enabled: e.Enabled}.AppendEvent(ev)
	case proto.EventPrompt:
		ev = abi.Prompt{Source: abi.SourceTelnet, Mark: e.Prompt.String()}.AppendEvent(ev)
	case proto.EventCommand:
		ev = abi.Command{Source: abi.SourceTelnet, Code: int(e.Command)}.AppendEvent(ev)
	default:
		return
	}
	k.ev = ev
	k.out.EventJSON(ev)
}

func (s *session) Data(out *sdk.Out, dir sdk.Dir, p []byte) sdk.Action {
	k := &s.sink
	k.out, k.runs, k.dirty = out, 0, false
	if dir == sdk.Outbound {
		s.conn.Encode(p, k)
		k.flush()
		return sdk.Consumed
	}
	if s.conn.Receive(p, k) && k.runs == 1 && len(k.first) == len(p) {
		k.first, k.runs = nil, 0
		return sdk.Continue
	}
	k.flush()
	if k.dirty {
		out.Checkpoint(s.conn.MarshalState())
	}
	return sdk.Consumed
}

type controlReq struct {
	Op   string `json:"op"`
	Cols int    `json:"cols"`
	Rows int    `json:"rows"`
}

func (s *session) Control(out *sdk.Out, raw []byte) ([]byte, error) {
	var req controlReq
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("control request is not JSON: %w", err)
	}
	k := &s.sink
	k.out, k.runs = out, 0
	switch req.Op {
	case "resize":
		if req.Cols < 1 || req.Cols > 0xffff || req.Rows < 1 || req.Rows > 0xffff {
			return nil, fmt.Errorf("resize: cols and rows must be 1-65535, got %dx%d", req.Cols, req.Rows)
		}
		s.conn.Resize(uint16(req.Cols), uint16(req.Rows), k)
	case "interrupt":
		s.conn.SendCommand(proto.IP, k)
	case "break":
		s.conn.SendCommand(proto.BRK, k)
	case "ayt":
		s.conn.SendCommand(proto.AYT, k)
	case "options":
		on := map[string][]string{"local": {}, "remote": {}}
		for opt := 0; opt < 256; opt++ {
			if s.conn.Enabled(byte(opt), true) {
				on["local"] = append(on["local"], proto.OptionName(byte(opt)))
			}
			if s.conn.Enabled(byte(opt), false) {
				on["remote"] = append(on["remote"], proto.OptionName(byte(opt)))
			}
		}
		return json.Marshal(on)
	default:
		return nil, fmt.Errorf("unknown op %q: expected resize, interrupt, break, ayt or options", req.Op)
	}
	k.flush()
	return nil, nil
}

func (s *session) ExportState() ([]byte, error) { return s.conn.MarshalState(), nil }

func (s *session) ImportState(state []byte) error { return s.conn.UnmarshalState(state) }
