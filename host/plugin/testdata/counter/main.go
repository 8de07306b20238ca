// Command counter is a test plugin for host/plugin. Each inbound chunk is
// echoed to the user as "[<version> #<count>] <chunk>", and the running
// count is offered to the host as a checkpoint. Some inbound chunks are
// commands that make the plugin misbehave:
//
//	panic  panic (the host sees a trap)
//	loop   spin forever (the host's deadline fires)
//	oom    allocate until the memory cap is hit
//	pass   return Continue with no emissions (the host's copy-free path)
//	fail   return an error status (does not poison the instance)
//	close  ask the host to close the session
//	flood  emit 8 MiB toward the user (past the host's per-call budget)
//
// With instance configuration {"loop_always": true} every inbound chunk
// loops (a plugin that passes no canary).
//
// "once:panic", "once:loop" and "once:oom" misbehave like the plain commands
// except on the first on_data call of a fresh instance: a transient failure
// that the host's retry on a fresh instance gets past.
//
// Control requests: {"op":"get"}, {"op":"panic"}, and {"op":"call","req":R}
// (makes the host call R and replies {"answer":…} or {"error":…}).
//
// Outbound chunks always pass unchanged. Session options (JSON):
// "stateless" (no state export/import), "no_checkpoint", "tick_ms" (emit a
// tick on to_peer and an event every tick_ms), "bad" (refuse to open).
//
// The version printed is set at link time (-X main.version=…) by the test
// that builds the plugin, so each build of a different version differs.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/termhost/termhost/sdk"
)

var version = "dev"

var (
	hog   [][]byte
	calls int // on_data calls this instance has served, all sessions
	spin  int
)

func init() { sdk.Register(open) }

func main() {}

type options struct {
	Stateless    bool  `json:"stateless"`
	NoCheckpoint bool  `json:"no_checkpoint"`
	TickMs       int64 `json:"tick_ms"`
	Bad          bool  `json:"bad"`
}

type core struct {
	o     options
	count int
	ticks int
	next  int64
}

// stateful adds state export/import to core.
type stateful struct{ *core }

var loopAlways bool

func open(o sdk.Open) (sdk.Session, error) {
	if len(o.Config) > 0 {
		var cfg struct {
			LoopAlways bool `json:"loop_always"`
		}
		if err := json.Unmarshal(o.Config, &cfg); err != nil {
			return nil, err
		}
		loopAlways = cfg.LoopAlways
	}
	c := &core{}
	if len(o.Options) > 0 {
		if err := json.Unmarshal(o.Options, &c.o); err != nil {
			return nil, err
		}
	}
	if c.o.Bad {
		return nil, errors.New("told to refuse")
	}
	if c.o.Stateless {
		return c, nil
	}
	return stateful{c}, nil
}

func (c *core) Data(out *sdk.Out, dir sdk.Dir, p []byte) sdk.Action {
	calls++
	if dir == sdk.Outbound {
		return sdk.Continue
	}
	cmd := string(p)
	if loopAlways {
		cmd = "loop"
	}
	if rest, ok := strings.CutPrefix(cmd, "once:"); ok && calls > 1 {
		cmd = rest
	}
	switch cmd {
	case "panic":
		panic("counter: told to panic")
	case "loop":
		for {
			spin++
		}
	case "oom":
		for {
			b := make([]byte, 1<<20)
			b[0] = 1
			hog = append(hog, b)
		}
	case "pass":
		return sdk.Continue
	case "fail":
		out.Logf("counter: told to fail")
		return sdk.Action(-1)
	case "close":
		return sdk.Close
	case "flood":
		piece := make([]byte, 64<<10)
		for range 128 {
			out.ToUser(piece)
		}
		return sdk.Consumed
	}
	c.count++
	out.ToUser(fmt.Appendf(nil, "[%s #%d] %s", version, c.count, p))
	if !c.o.NoCheckpoint {
		out.Checkpoint(strconv.AppendInt(nil, int64(c.count), 10))
	}
	return sdk.Consumed
}

func (c *core) Control(out *sdk.Out, req []byte) ([]byte, error) {
	var r struct {
		Op  string          `json:"op"`
		Req json.RawMessage `json:"req"`
	}
	if err := json.Unmarshal(req, &r); err != nil {
		return nil, err
	}
	switch r.Op {
	case "get":
		return json.Marshal(map[string]any{"count": c.count, "version": version, "ticks": c.ticks})
	case "panic":
		panic("counter: control told to panic")
	case "call":
		ans, err := out.HostCall(r.Req)
		if err != nil {
			return json.Marshal(map[string]any{"error": err.Error()})
		}
		return json.Marshal(map[string]any{"answer": string(ans)})
	}
	return nil, fmt.Errorf("unknown op %q", r.Op)
}

func (c *core) Tick(out *sdk.Out, now int64) int64 {
	if c.o.TickMs <= 0 {
		return 0
	}
	if c.next != 0 && now >= c.next {
		c.ticks++
		out.ToPeer([]byte("tick"))
		out.Event(map[string]any{"type": "tick", "n": c.ticks})
	}
	if c.next == 0 || now >= c.next {
		c.next = now + c.o.TickMs
	}
	return c.next
}

func (s stateful) ExportState() ([]byte, error) {
	return strconv.AppendInt(nil, int64(s.count), 10), nil
}

func (s stateful) ImportState(b []byte) error {
	n, err := strconv.Atoi(string(b))
	if err != nil {
		return err
	}
	s.count = n
	return nil
}
