package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

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
	color := fs.Bool("color", true, "show the device's ANSI colours")
	return func(stdout, stderr io.Writer) error {
		return demo(po, *color, stdout, stderr)
	}
}

func demo(po pluginOptions, color bool, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	dev, err := devsim.Listen("127.0.0.1:0", devsim.Config{EOR: true, NoColor: !color})
	if err != nil {
		return fmt.Errorf("device simulator: %w", err)
	}
	defer dev.Close()
	cfg, err := po.config(log)
	if err != nil {
		return err
	}
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

	d := &demoRun{ctx: ctx, cs: cs, out: stdout}
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
	fmt.Fprintln(stdout, "\ndemo finished: every call above went through go-sdk's MCP client to termhost's tools.")
	return nil
}

type demoRun struct {
	ctx context.Context
	cs  *sdk.ClientSession
	out io.Writer
	n   int
	err error
}

// call runs one tool, prints it, and returns the decoded result object.
func (d *demoRun) call(tool string, args map[string]any) map[string]any {
	d.n++
	a, _ := json.Marshal(args)
	fmt.Fprintf(d.out, "\n\x1b[1m[%d] → %s %s\x1b[0m\n", d.n, tool, a)
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
			if strings.Contains(line, "\x1b[") {
				line += "\x1b[0m" // keep a colour from bleeding into the next line
			}
			fmt.Fprintf(d.out, "    │ %s\n", line)
		}
	}
	return obj
}
