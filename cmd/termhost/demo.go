package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/host"
	"github.com/termhost/termhost/internal/devsim"
)

// demoFlags: the demo starts the embedded device simulator on loopback and
// drives it through the real MCP tools, with go-sdk's client over an
// in-process transport, printing every call and its result.
func demoFlags(fs *flags) func(stdout, stderr io.Writer) error {
	var po pluginOptions
	po.register(fs)
	color := colorAuto
	fs.alone("color", "always")
	fs.Var(&color, "color", `colour: "auto" (when stdout is a terminal and NO_COLOR is not set), "always" (also plain --color) or "never"; without colour the device's own escape codes are shown as text (\e[32m)`)
	return func(stdout, stderr io.Writer) error {
		return demo(po, color.enabled(os.Getenv("NO_COLOR"), isTerminal(stdout)), stdout, stderr)
	}
}

func demo(po pluginOptions, color bool, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The device colours its output as a real one would, whatever the
	// demo's own output can show.
	dev, err := devsim.Listen("127.0.0.1:0", devsim.Config{EOR: true})
	if err != nil {
		return fmt.Errorf("device simulator: %w", err)
	}
	defer dev.Close()
	cfg, err := po.config(log)
	if err != nil {
		return err
	}
	// The router's login, as a credential: the host types it, the model
	// (and this transcript) never sees the password.
	credDir, err := os.MkdirTemp("", "termhost-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(credDir)
	devHost, devPort, _ := net.SplitHostPort(dev.Addr())
	creds := fmt.Sprintf(`{"version":"1.0","credentials":[{"id":"edge-r1","name":"the simulated router","host":%q,"port":%s,`+
		`"username":"admin","password":"dGVybWhvc3Q=","enableSecret":"dGVybWhvc3Q="}]}`, devHost, devPort)
	cfg.CredentialsFile = filepath.Join(credDir, "credentials.json")
	if err := os.WriteFile(cfg.CredentialsFile, []byte(creds), 0o600); err != nil {
		return err
	}
	cfg.RulesFile = filepath.Join(credDir, "rules.json")
	cfg.KnownHostsFile = filepath.Join(credDir, "known_hosts")
	h, err := host.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer h.Close()

	serverT, clientT := sdk.NewInMemoryTransports()
	ss, err := h.MCP.MCP().Connect(ctx, serverT, nil)
	if err != nil {
		return err
	}
	defer ss.Close()
	client := sdk.NewClient(&sdk.Implementation{Name: "termhost-demo", Version: "1"}, nil)
	cs, err := client.Connect(ctx, clientT, nil)
	if err != nil {
		return err
	}
	defer cs.Close()

	d := &demoRun{ctx: ctx, cs: cs, out: stdout, color: color}
	addrHost, portStr, _ := net.SplitHostPort(dev.Addr())
	port, _ := strconv.Atoi(portStr)
	fmt.Fprintf(stdout, "termhost demo: a simulated router (edge-r1) listens on %s; every step below is a real MCP tool call.\n", dev.Addr())

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return err
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	fmt.Fprintf(stdout, "\ntools/list: %s\n", strings.Join(names, ", "))

	conn := d.call("telnet_connect", map[string]any{"host": addrHost, "port": port, "name": "edge-r1"})
	if d.err != nil {
		return d.err
	}
	id, _ := conn["sessionId"].(string)
	steps := []struct {
		tool string
		args map[string]any
	}{
		{"telnet_read", map[string]any{"sessionId": id, "until": "Username: ?$", "timeoutMs": 5000}},
		{"telnet_send", map[string]any{"sessionId": id, "command": "admin"}},
		{"telnet_read", map[string]any{"sessionId": id, "until": "Password: ?$", "timeoutMs": 5000}},
		{"telnet_send", map[string]any{"sessionId": id, "command": "termhost"}},
		{"telnet_read", map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000}},
		{"telnet_send", map[string]any{"sessionId": "edge-r1", "command": "show version"}},
		{"telnet_read", map[string]any{"sessionId": "edge-r1", "prompt": true, "timeoutMs": 5000}},
		{"telnet_send", map[string]any{"sessionId": id, "command": "show interfaces"}},
		{"telnet_read", map[string]any{"sessionId": id, "until": "--More--", "timeoutMs": 5000}},
		{"telnet_send", map[string]any{"sessionId": id, "command": "q", "noNewline": true}},
		{"telnet_read", map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000}},
		{"telnet_send", map[string]any{"sessionId": id, "command": "show ip interface brief"}},
		{"telnet_read", map[string]any{"sessionId": id, "prompt": true, "timeoutMs": 5000}},
		{"telnet_send", map[string]any{"sessionId": id, "command": "echo " + strconv.Itoa(6*7)}},
		{"telnet_read", map[string]any{"sessionId": id, "until": `\b42\b`, "timeoutMs": 5000}},
		{"telnet_send", map[string]any{"sessionId": id, "command": "ping 10.0.0.2"}},
		{"telnet_read", map[string]any{"sessionId": id, "idleMs": 300, "timeoutMs": 5000}},
		{"telnet_list", map[string]any{}},
		{"plugins_list", map[string]any{}},
		{"telnet_disconnect", map[string]any{"sessionId": id}},
		{"telnet_disconnect", map[string]any{"sessionId": id}},
		{"telnet_read", map[string]any{"sessionId": id}},
	}
	for _, s := range steps {
		d.call(s.tool, s.args)
		if d.err != nil {
			return d.err
		}
	}
	fmt.Fprintln(stdout, "\nThe same router the way an agent should drive it: a credential logs in (the host types the password;"+
		" it never reaches the model), the cisco_ios dialect is detected, and run_command collects a paged show in one call.")
	conn = d.call("telnet_connect", map[string]any{"credentialId": "edge-r1", "dialect": "auto"})
	if d.err != nil {
		return d.err
	}
	id, _ = conn["sessionId"].(string)
	for _, s := range []struct {
		tool string
		args map[string]any
	}{
		{"run_command", map[string]any{"sessionId": id, "command": "show interfaces"}},
		{"run_command", map[string]any{"sessionId": id, "command": "show ip interface brief"}},
		{"run_command", map[string]any{"sessionId": id, "command": "show bogus"}},
		{"run_command", map[string]any{"sessionId": id, "command": "enable"}},
		{"send_secret", map[string]any{"sessionId": id, "credentialId": "edge-r1", "field": "enableSecret"}},
		{"set_mode", map[string]any{"sessionId": id, "mode": "config"}},
		{"set_mode", map[string]any{"sessionId": id, "mode": "privileged"}},
		{"run_command", map[string]any{"sessionId": id, "command": "reload"}},
		{"telnet_disconnect", map[string]any{"sessionId": id}},
	} {
		d.call(s.tool, s.args)
		if d.err != nil {
			return d.err
		}
	}
	fmt.Fprintln(stdout, "\ndemo finished: every call above went through go-sdk's MCP client to termhost's tools.")
	return nil
}

type demoRun struct {
	ctx   context.Context
	cs    *sdk.ClientSession
	out   io.Writer
	color bool
	n     int
	err   error
}

// call runs one tool, prints it, and returns the decoded result object.
func (d *demoRun) call(tool string, args map[string]any) map[string]any {
	d.n++
	a, _ := json.Marshal(args)
	heading := fmt.Sprintf("[%d] → %s %s", d.n, tool, a)
	if d.color {
		heading = "\x1b[1m" + heading + "\x1b[0m"
	}
	fmt.Fprintf(d.out, "\n%s\n", heading)
	start := time.Now()
	res, err := d.cs.CallTool(d.ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	took := time.Since(start)
	if err != nil {
		d.err = fmt.Errorf("%s: %w", tool, err)
		return nil
	}
	var text string
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			text += t.Text
		}
	}
	if res.IsError {
		fmt.Fprintf(d.out, "    ← error (%v): %s\n", took.Round(time.Millisecond/10), text)
		return nil
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(text), &obj); err != nil {
		fmt.Fprintf(d.out, "    ← %s\n", text)
		return nil
	}
	data, hasData := obj["data"].(string)
	if hasData {
		delete(obj, "data")
	}
	meta, _ := json.Marshal(obj)
	fmt.Fprintf(d.out, "    ← (%v) %s\n", took.Round(time.Millisecond/10), meta)
	if hasData && data != "" {
		for _, line := range strings.Split(strings.TrimRight(strings.ReplaceAll(data, "\r\n", "\n"), "\n"), "\n") {
			line = strings.TrimRight(line, "\r")
			switch {
			case !d.color:
				line = escapeControls(line)
			case strings.Contains(line, "\x1b["):
				line += "\x1b[0m" // keep a colour from bleeding into the next line
			}
			fmt.Fprintf(d.out, "    │ %s\n", line)
		}
	}
	return obj
}

// colorMode is the demo's --color: auto, always or never; plain --color
// means always (flags.alone).
type colorMode string

const (
	colorAuto   colorMode = "auto"
	colorAlways colorMode = "always"
	colorNever  colorMode = "never"
)

func (m *colorMode) String() string { return string(*m) }

func (m *colorMode) Set(s string) error {
	switch strings.ToLower(s) {
	case "auto":
		*m = colorAuto
	case "always", "true", "1", "yes", "on":
		*m = colorAlways
	case "never", "false", "0", "no", "off":
		*m = colorNever
	default:
		return fmt.Errorf("expected auto, always or never")
	}
	return nil
}

// enabled says whether output gets colour. auto follows
// https://no-color.org (NO_COLOR set and non-empty turns colour off) and
// gives none to a pipe or a file; an explicit --color=always wins over
// NO_COLOR, as the convention allows for command-line flags.
func (m colorMode) enabled(noColor string, terminal bool) bool {
	switch m {
	case colorAlways:
		return true
	case colorNever:
		return false
	}
	return noColor == "" && terminal
}

// isTerminal says whether w is a terminal (a character device: a tty, or
// /dev/null, where colour does no harm).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// escapeControls shows what a terminal would interpret: ESC as \e (so the
// device's colour codes read as \e[32m), other control characters and
// invalid UTF-8 as Go-style escapes. Tabs stay.
func escapeControls(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r == 0x1b:
			b.WriteString(`\e`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\t':
			b.WriteByte('\t')
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}
