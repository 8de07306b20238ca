package device

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/plugins/dialect/core"
	"github.com/termhost/termhost/sdk/abi"
)

// dialectBinding runs the dialect plugin's scanner natively, as the plugin
// does in wazero (main.go): events right after their bytes, info on control.
func dialectBinding(name string) *fake {
	sc := core.New()
	if name != "" {
		if err := sc.Force(name); err != nil {
			panic(err)
		}
	}
	var mu sync.Mutex
	return &fake{
		name: testPlugins.Dialect,
		data: func(dir abi.Dir, p []byte, s wasmhost.Sink) (abi.Action, error) {
			mu.Lock()
			defer mu.Unlock()
			if dir == abi.Outbound {
				sc.Outbound(p)
				return abi.Continue, nil
			}
			sc.Inbound(p, dialectSink{s})
			return abi.Consumed, nil
		},
		control: func(req []byte, s wasmhost.Sink) error {
			mu.Lock()
			defer mu.Unlock()
			if !bytes.Contains(req, []byte(`"info"`)) {
				return errors.New("unknown op")
			}
			b, _ := json.Marshal(sc.Info())
			s.Emit(abi.Reply, b)
			return nil
		},
	}
}

// dialectSink writes the scanner's events as the plugin's main does.
type dialectSink struct{ s wasmhost.Sink }

func (k dialectSink) User(p []byte) { k.s.Emit(abi.ToUser, p) }
func (k dialectSink) Peer(p []byte) { k.s.Emit(abi.ToPeer, p) }
func (k dialectSink) ev(v map[string]any) {
	b, _ := json.Marshal(v)
	k.s.Emit(abi.Event, b)
}
func (k dialectSink) Prompt(p core.Prompt) {
	v := map[string]any{"type": "prompt", "dialect": p.Dialect, "hostname": p.Hostname, "mode": p.Mode, "submode": p.Submode, "prompt": p.Prompt}
	if p.User != "" {
		v["user"] = p.User
	}
	if p.Cwd != "" {
		v["cwd"] = p.Cwd
	}
	k.ev(v)
}
func (k dialectSink) Done() { k.ev(map[string]any{"type": "done"}) }
func (k dialectSink) Pager(p core.Pager) {
	v := map[string]any{"type": "pager", "text": p.Text, "pages": p.Pages}
	if !p.Answered {
		v["answered"] = false
	}
	k.ev(v)
}
func (k dialectSink) PagerLimit(p core.PagerLimit) {
	v := map[string]any{"type": "pager_limit", "pages": p.Pages}
	if p.Quit {
		v["quit"] = true
	}
	k.ev(v)
}
func (k dialectSink) Question(t string) { k.ev(map[string]any{"type": "question", "text": t}) }
func (k dialectSink) Login(f string)    { k.ev(map[string]any{"type": "login", "field": f}) }
func (k dialectSink) Error(t string)    { k.ev(map[string]any{"type": "error", "text": t}) }
func (k dialectSink) Dialect(d core.Detection) {
	k.ev(map[string]any{"type": "dialect", "name": d.Name, "detected": true, "confident": d.Confident})
}

// device is a scripted IOS-like (or, with junos, Junos-like) CLI on the
// peer's end of the pipe: it echoes commands (not passwords), asks for the
// enable secret, and records every line it received.
type device struct {
	conn   net.Conn
	junos  bool
	shell  bool // a Linux shell's prompt
	secret string
	dirty  bool   // junos: uncommitted changes
	reject string // a command answered with an error
	ignore string // a command that changes nothing

	mu    sync.Mutex
	lines []string
}

func (d *device) received() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.lines...)
}

func (d *device) run(start string) {
	mode := start
	prompt := func() string {
		if d.shell {
			return "admin@r1:~$ "
		}
		if d.junos {
			if mode == "config" {
				return "\r\n[edit]\r\nadmin@r1# "
			}
			return "admin@r1> "
		}
		return map[string]string{"user": "R1>", "privileged": "R1#", "config": "R1(config)#"}[mode]
	}
	w := func(s string) { d.conn.Write([]byte(s)) }
	var buf []byte
	readLine := func() (string, bool) {
		b := make([]byte, 256)
		for {
			if i := bytes.IndexByte(buf, '\r'); i >= 0 {
				l := string(buf[:i])
				buf = buf[i+1:]
				d.mu.Lock()
				d.lines = append(d.lines, l)
				d.mu.Unlock()
				return l, true
			}
			n, err := d.conn.Read(b)
			if err != nil {
				return "", false
			}
			buf = append(buf, b[:n]...)
		}
	}
	w("\r\n" + prompt())
	for {
		l, ok := readLine()
		if !ok {
			return
		}
		w(l + "\r\n")
		switch {
		case l == d.reject:
			w("% Invalid input detected at '^' marker.\r\n\r\n")
		case l == d.ignore:
		case d.junos && l == "configure" && mode == "user":
			w("Entering configuration mode\r\n")
			mode = "config"
		case d.junos && l == "exit configuration-mode" && mode == "config":
			if d.dirty {
				w("The configuration has been changed but not committed\r\nExit with uncommitted changes? [yes,no] (yes) ")
				if a, ok := readLine(); !ok || a != "yes" {
					break
				}
				w("\r\n")
			}
			w("Exiting configuration mode\r\n\r\n")
			mode = "user"
		case d.junos:
			w("unknown command.\r\n")
		case l == "enable" && mode == "user":
			for try := 0; ; try++ {
				w("Password: ")
				got, ok := readLine()
				if !ok {
					return
				}
				w("\r\n")
				if got == d.secret {
					mode = "privileged"
					break
				}
				if try == 2 {
					w("% Bad secrets\r\n\r\n")
					break
				}
			}
		case l == "disable" && mode == "privileged":
			mode = "user"
		case l == "configure terminal" && mode == "privileged":
			w("Enter configuration commands, one per line.  End with CNTL/Z.\r\n")
			mode = "config"
		case l == "end" && mode == "config":
			mode = "privileged"
		default:
			w("% Invalid input detected at '^' marker.\r\n\r\n")
		}
		w(prompt())
	}
}

// modeSession opens a pipe session with the dialect and a scripted device
// in mode start, and waits for its first prompt.
func modeSession(t *testing.T, dialect string, d *device, start string) *session.Session {
	t.Helper()
	r := newRegistry(t, session.Config{})
	s, peer := testKind(t, r, session.Spec{Kind: "pipe"}, []*fake{dialectBinding(dialect)})
	d.conn = peer
	go d.run(start)
	if res := read(t, s, session.WaitSpec{Prompt: true, Timeout: 5 * time.Second}); res.Reason != session.ReasonPrompt {
		t.Fatalf("first prompt: %+v", res)
	}
	return s
}

func secretFor(secret string, asked *[]string) func(string) ([]byte, error) {
	return func(field string) ([]byte, error) {
		*asked = append(*asked, field)
		return []byte(secret), nil
	}
}

func TestSetModeRoundTrip(t *testing.T) {
	const secret = "en-Secret-42"
	d := &device{secret: secret}
	s := modeSession(t, "cisco_ios", d, "user")
	ctx := ctxTimeout(t, 30*time.Second)
	var asked []string
	res, err := SetMode(ctx, s, ModeOptions{Mode: "config", Timeout: 10 * time.Second, Secret: secretFor(secret, &asked)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != "done" || res.Mode != "config" || res.Prompt != "R1(config)#" || res.Dialect != "cisco_ios" ||
		strings.Join(res.Steps, "|") != "enable|configure terminal" || fmt.Sprint(asked) != "[enable]" {
		t.Fatalf("user to config: %+v (secret asked for %v)", res, asked)
	}
	if strings.Contains(fmt.Sprintf("%+v", res), secret) {
		t.Fatalf("the secret is in the result: %+v", res)
	}
	res, err = SetMode(ctx, s, ModeOptions{Mode: "user", Timeout: 10 * time.Second})
	if err != nil || res.Reason != "done" || res.Mode != "user" || strings.Join(res.Steps, "|") != "end|disable" {
		t.Fatalf("config to user: %+v %v", res, err)
	}
	res, err = SetMode(ctx, s, ModeOptions{Mode: "user", Timeout: 10 * time.Second})
	if err != nil || res.Reason != "done" || res.Mode != "user" || len(res.Steps) != 0 || res.Steps == nil {
		t.Fatalf("already there: %+v %v", res, err)
	}
	want := []string{"enable", secret, "configure terminal", "end", "disable"}
	if got := d.received(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("the device received %q, want %q", got, want)
	}
	raw, _ := s.Raw(1 << 20)
	if bytes.Contains(raw, []byte(secret)) {
		t.Fatalf("the secret is in the buffer: %q", raw)
	}
}

// Without a secret the move stops at the field; a later call with one
// types it at the field still waiting, then goes on.
func TestSetModeStopsAtLogin(t *testing.T) {
	d := &device{secret: "s3"}
	s := modeSession(t, "cisco_ios", d, "user")
	ctx := ctxTimeout(t, 30*time.Second)
	res, err := SetMode(ctx, s, ModeOptions{Mode: "config", Timeout: 10 * time.Second})
	if err != nil || res.Reason != "login" || res.Field != "enable" || strings.Join(res.Steps, "|") != "enable" {
		t.Fatalf("no secret: %+v %v", res, err)
	}
	var asked []string
	res, err = SetMode(ctx, s, ModeOptions{Mode: "config", Timeout: 10 * time.Second, Secret: secretFor("s3", &asked)})
	if err != nil || res.Reason != "done" || res.Mode != "config" || strings.Join(res.Steps, "|") != "configure terminal" || len(asked) != 1 {
		t.Fatalf("resumed with the secret: %+v %v", res, err)
	}
	if got := d.received(); strings.Join(got, "|") != "enable|s3|configure terminal" {
		t.Fatalf("the device received %q", got)
	}
}

// A wrong secret: reported once, not typed again and again.
func TestSetModeWrongSecret(t *testing.T) {
	d := &device{secret: "right"}
	s := modeSession(t, "cisco_ios", d, "user")
	var asked []string
	res, err := SetMode(ctxTimeout(t, 30*time.Second), s, ModeOptions{Mode: "privileged", Timeout: 10 * time.Second, Secret: secretFor("wrong", &asked)})
	if err != nil || res.Reason != "login" || res.Field != "enable" || !strings.Contains(res.Error, "again") || len(asked) != 1 {
		t.Fatalf("wrong secret: %+v %v (asked %v)", res, err, asked)
	}
	if got := d.received(); len(got) != 2 {
		t.Fatalf("the device received %q", got)
	}
}

// A question on the way stops the move and is returned, not answered;
// asked again while it waits, nothing is sent.
func TestSetModeQuestion(t *testing.T) {
	d := &device{junos: true, dirty: true}
	s := modeSession(t, "juniper_junos", d, "config")
	ctx := ctxTimeout(t, 30*time.Second)
	res, err := SetMode(ctx, s, ModeOptions{Mode: "user", Timeout: 10 * time.Second})
	if err != nil || res.Reason != "question" || !strings.Contains(res.Question, "[yes,no]") || strings.Join(res.Steps, "|") != "exit configuration-mode" {
		t.Fatalf("question: %+v %v", res, err)
	}
	res, err = SetMode(ctx, s, ModeOptions{Mode: "user", Timeout: 10 * time.Second})
	if err != nil || res.Reason != "question" || len(res.Steps) != 0 {
		t.Fatalf("question still waiting: %+v %v", res, err)
	}
	if got := d.received(); len(got) != 1 {
		t.Fatalf("the device received %q", got)
	}
	if _, err := SetMode(ctx, s, ModeOptions{Mode: "privileged", Timeout: 10 * time.Second}); !errors.Is(err, ErrNoMode) || !strings.Contains(err.Error(), "juniper_junos has no privileged mode") {
		t.Fatalf("junos privileged: %v", err)
	}
}

// A step the device rejects (an error line) or that leaves the mode as
// it was stops the move at once; a dialect without modes and a session
// without a dialect are errors that say so.
func TestSetModeErrors(t *testing.T) {
	ctx := ctxTimeout(t, 30*time.Second)
	d := &device{secret: "x", reject: "configure terminal"}
	s := modeSession(t, "cisco_ios", d, "privileged")
	res, err := SetMode(ctx, s, ModeOptions{Mode: "config", Timeout: 10 * time.Second})
	if err != nil || res.Reason != "error" || !strings.HasPrefix(res.Error, "% Invalid input") || res.Mode != "privileged" || len(res.Steps) != 1 {
		t.Fatalf("rejected: %+v %v", res, err)
	}
	d = &device{secret: "x", ignore: "disable"}
	s = modeSession(t, "cisco_ios", d, "config")
	res, err = SetMode(ctx, s, ModeOptions{Mode: "user", Timeout: 10 * time.Second})
	if err != nil || res.Reason != "error" || !strings.Contains(res.Error, `still in privileged mode after "disable"`) || strings.Join(res.Steps, "|") != "end|disable" {
		t.Fatalf("no change: %+v %v", res, err)
	}

	s = modeSession(t, "linux", &device{shell: true}, "user")
	if _, err := SetMode(ctx, s, ModeOptions{Mode: "config", Timeout: time.Second}); !errors.Is(err, ErrNoMode) || !strings.Contains(err.Error(), "linux has no modes") {
		t.Fatalf("linux: %v", err)
	}
	s = modeSession(t, "cisco_nxos", &device{}, "user")
	if _, err := SetMode(ctx, s, ModeOptions{Mode: "config", Timeout: time.Second}); !errors.Is(err, ErrNoMode) || !strings.Contains(err.Error(), "no command from user mode toward config") {
		t.Fatalf("nx-os from user mode: %v", err)
	}

	r := newRegistry(t, session.Config{})
	plain, _ := testKind(t, r, session.Spec{Kind: "pipe"}, nil)
	if _, err := SetMode(ctx, plain, ModeOptions{Mode: "config"}); !errors.Is(err, session.ErrUnsupported) || !strings.Contains(err.Error(), "dialect") {
		t.Fatalf("no dialect: %v", err)
	}
	if _, err := SetMode(ctx, plain, ModeOptions{Mode: "enable"}); err == nil || !strings.Contains(err.Error(), "user, privileged, config") {
		t.Fatalf("bad mode: %v", err)
	}
}

func TestNextStep(t *testing.T) {
	ios := map[string]map[string]string{
		"user":       {"privileged": "enable"},
		"privileged": {"config": "configure terminal", "user": "disable"},
		"config":     {"privileged": "end"},
	}
	for _, c := range []struct{ from, to, want string }{
		{"user", "privileged", "enable"},
		{"user", "config", "enable"},
		{"config", "user", "end"},
		{"privileged", "user", "disable"},
		{"privileged", "config", "configure terminal"},
	} {
		if got, ok := nextStep(ios, c.from, c.to); !ok || got != c.want {
			t.Errorf("%s to %s: %q %v, want %q", c.from, c.to, got, ok, c.want)
		}
	}
	nx := map[string]map[string]string{"privileged": {"config": "configure terminal"}, "config": {"privileged": "end"}}
	if _, ok := nextStep(nx, "user", "config"); ok {
		t.Error("nx-os: a way from user mode")
	}
	if got := modesOf(nx); fmt.Sprint(got) != "[privileged config]" {
		t.Errorf("modesOf: %v", got)
	}
}
