package main

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/termhost/termhost/internal/testutil"
)

// viewPicture calls view_screen with format png and returns the image
// content's bytes and the state beside it.
func viewPicture(t *testing.T, cs *sdk.ClientSession, id string) ([]byte, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "view_screen", Arguments: map[string]any{"session_id": id, "format": "png"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) != 2 {
		t.Fatalf("view_screen png: error %v, %d content blocks: %+v", res.IsError, len(res.Content), res.Content)
	}
	img, isImg := res.Content[0].(*sdk.ImageContent)
	text, isText := res.Content[1].(*sdk.TextContent)
	if !isImg || !isText || img.MIMEType != "image/png" {
		t.Fatalf("view_screen png: want image/png then text, got %T %T", res.Content[0], res.Content[1])
	}
	var state map[string]any
	if err := json.Unmarshal([]byte(text.Text), &state); err != nil {
		t.Fatalf("state: %v: %s", err, text.Text)
	}
	return img.Data, state
}

// TestViewScreenPictures: view_screen's png and svg formats on a session
// of every kind (a Telnet shell, an SSH shell, a program under a PTY): a
// PNG as image content the size of the screen, with a bold blue word's
// colour in it, and an SVG with the word and its colour.
func TestViewScreenPictures(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	requireTool(t, "/bin/busybox", "--list")
	f := newSSHFixture(t)
	h := &hostProc{t: t, cs: f.cs}

	port := busyboxTelnetd(t, "/bin/sh", "PS1=$ ")

	for _, k := range []struct {
		kind string
		open func(t *testing.T) string
	}{
		{"telnet", func(t *testing.T) string {
			return mustCall(t, f.cs, "telnet_connect", map[string]any{"host": "127.0.0.1", "port": port})["sessionId"].(string)
		}},
		{"ssh", func(t *testing.T) string {
			return f.mustCall(t, "ssh_shell", map[string]any{"credentialId": "key", "cols": 80, "rows": 24})["session_id"].(string)
		}},
		{"pty", func(t *testing.T) string {
			return mustCall(t, f.cs, "launch_app", map[string]any{"command": "bash", "args": []string{"--norc", "--noprofile", "-i"},
				"env": map[string]any{"PS1": "$ "}, "cols": 80, "rows": 24})["session_id"].(string)
		}},
	} {
		t.Run(k.kind, func(t *testing.T) {
			h.t = t
			id := k.open(t)
			h.screenHas(id, "$")
			mustCall(t, f.cs, "resize_terminal", map[string]any{"session_id": id, "cols": 80, "rows": 24})
			mustCall(t, f.cs, "send_keys", map[string]any{"session_id": id, "text": `printf '\033[1;34mpicture-%s\033[0m\n' $((6*7))` + "\r"})
			h.screenHas(id, "picture-42")

			p, state := viewPicture(t, f.cs, id)
			img, err := png.Decode(bytes.NewReader(p))
			if err != nil {
				t.Fatal(err)
			}
			if b := img.Bounds(); b.Dx() != 800 || b.Dy() != 480 || state["cols"] != 80.0 || state["format"] != "png" {
				t.Errorf("png %v for %v", b, state)
			}
			if len(p) >= 30<<10 {
				t.Errorf("png of an 80x24 screen is %d bytes", len(p))
			}
			blue := false
			for y := 0; y < 480 && !blue; y++ {
				for x := 0; x < 800; x++ {
					if r, g, b, _ := img.At(x, y).RGBA(); r>>8 == 0x24 && g>>8 == 0x72 && b>>8 == 0xc8 {
						blue = true
						break
					}
				}
			}
			if !blue {
				t.Error("png: no pixel in colour 4 (blue) of the bold blue word")
			}

			svg := mustCall(t, f.cs, "view_screen", map[string]any{"session_id": id, "format": "svg"})
			if c, _ := svg["content"].(string); !strings.HasPrefix(c, "<svg") || !strings.Contains(c, `fill="#2472c8" font-weight="bold">picture-42</text>`) {
				t.Errorf("svg: %.2000s", c)
			}
			mustCall(t, f.cs, "stop_app", map[string]any{"session_id": id})
		})
	}
}

// lsSession starts bash in a directory like termhost's own checkout
// (fixed sizes and times), runs `ls -l` with GNU ls's colours, and returns
// the session once the screen has settled.
func lsSession(t testing.TB, cs *sdk.ClientSession) string {
	h := &hostProc{t: t, cs: cs}
	dir := t.TempDir()
	for i, name := range []string{"BENCHMARKS.md", "Makefile", "README.md", "credentials.example.json", "go.mod", "go.sum", "rules.example.json", "termhost"} {
		if err := os.WriteFile(filepath.Join(dir, name), bytes.Repeat([]byte("x"), 100+i*977), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"cmd", "dialect", "docs", "host", "internal", "plugins", "sdk"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(dir, "termhost"), 0o755)
	os.Symlink("termhost", filepath.Join(dir, "th"))
	stamp := time.Date(2026, 11, 25, 19, 20, 0, 0, time.UTC)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		os.Chtimes(filepath.Join(dir, e.Name()), stamp, stamp)
	}
	id := mustCall(t, cs, "launch_app", map[string]any{"command": "bash", "args": []string{"--norc", "--noprofile", "-i"},
		"env": map[string]any{"PS1": "user@build:~/src/termhost$ ", "LC_ALL": "C", "TZ": "UTC"}, "cwd": dir, "cols": 80, "rows": 24})["session_id"].(string)
	h.screenHas(id, "$")
	mustCall(t, cs, "send_keys", map[string]any{"session_id": id, "text": "ls -l --color=always\r"})
	h.screenHas(id, "th -> termhost")
	h.call(10*time.Second, "wait_for", map[string]any{"session_id": id, "screenStable": 300, "timeoutMs": 5000})
	return id
}

// BenchmarkViewScreenPNG: view_screen png of an 80x24 `ls -l` screen end to
// end (the screen plugin's cells, the drawing, base64, stdio): p50, p90
// and the PNG's size (BENCHMARKS.md "Pictures").
func BenchmarkViewScreenPNG(b *testing.B) {
	cs := startServe(b)
	id := lsSession(b, cs)
	ctx := context.Background()
	args := &sdk.CallToolParams{Name: "view_screen", Arguments: map[string]any{"session_id": id, "format": "png"}}
	times := make([]time.Duration, 0, b.N)
	size := 0
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		res, err := cs.CallTool(ctx, args)
		if err != nil || res.IsError {
			b.Fatalf("view_screen png: %v %+v", err, res)
		}
		times = append(times, time.Since(start))
		size = len(res.Content[0].(*sdk.ImageContent).Data)
	}
	b.StopTimer()
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(times[len(times)*9/10].Microseconds())/1000, "p90-ms")
	b.ReportMetric(float64(size), "png-bytes")
}

// TestViewScreenPNGLegible: tesseract reads at least 98% of the
// characters of an 80x24 screen of `ls -l` (GNU ls's colours) from
// view_screen's PNG, compared with the plain view of the same screen, and
// the PNG is under 30 KB.
func TestViewScreenPNGLegible(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	testutil.NeedProgram(t, "tesseract")
	cs := startServe(t)
	h := &hostProc{t: t, cs: cs}
	id := lsSession(t, cs)

	p, _ := viewPicture(t, cs, id)
	plain := h.view(id)
	got := testutil.OCR(t, p)
	sim := testutil.TextSimilarity(got, plain)
	t.Logf("PNG %d bytes; OCR similarity %.4f", len(p), sim)
	if sim < 0.98 {
		t.Errorf("OCR similarity %.4f < 0.98\nOCR:\n%s\nplain view:\n%s", sim, got, plain)
	}
	if len(p) >= 30<<10 {
		t.Errorf("PNG %d bytes, want < 30 KB", len(p))
	}
}

// TestViewScreenPictureBounds: a screen too wide for a picture is refused
// with its size and the limit (the session and the server carry on), an
// SVG or PNG longer than maxBytes is refused rather than cut, and an ended
// session's frozen screen is still drawn.
func TestViewScreenPictureBounds(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	cs := startServe(t)
	h := &hostProc{t: t, cs: cs}
	id := mustCall(t, cs, "launch_app", map[string]any{"command": "bash", "args": []string{"--norc", "--noprofile", "-i"},
		"env": map[string]any{"PS1": "$ "}, "cols": 80, "rows": 24})["session_id"].(string)
	h.screenHas(id, "$")
	mustCall(t, cs, "resize_terminal", map[string]any{"session_id": id, "cols": 1000, "rows": 32})
	r := h.call(20*time.Second, "view_screen", map[string]any{"session_id": id, "format": "png"})
	if !r.isErr || !strings.Contains(r.msg, "1000x32") || !strings.Contains(r.msg, "8000 pixels a side") {
		t.Errorf("png of a 1000x32 screen: %+v", r)
	}
	t.Logf("png of a 1000x32 screen: %s", r.msg)
	r = h.call(20*time.Second, "view_screen", map[string]any{"session_id": id, "format": "svg", "maxBytes": 100})
	if !r.isErr || !strings.Contains(r.msg, "maxBytes") || !strings.Contains(r.msg, "never cut") {
		t.Errorf("svg over maxBytes: %+v", r)
	}
	mustCall(t, cs, "resize_terminal", map[string]any{"session_id": id, "cols": 80, "rows": 24})
	r = h.call(20*time.Second, "view_screen", map[string]any{"session_id": id, "format": "png", "maxBytes": 100})
	if !r.isErr || !strings.Contains(r.msg, "maxBytes") || !strings.Contains(r.msg, "never cut") {
		t.Errorf("png over maxBytes: %+v", r)
	}
	mustCall(t, cs, "send_keys", map[string]any{"session_id": id, "text": "echo frozen-$((6*7)); exit\r"})
	h.call(20*time.Second, "wait_for", map[string]any{"session_id": id, "exit": true, "timeoutMs": 15000})
	p, state := viewPicture(t, cs, id)
	if state["state"] == "active" || len(p) == 0 {
		t.Errorf("ended session: state %v, %d bytes", state["state"], len(p))
	}
	if svg := mustCall(t, cs, "view_screen", map[string]any{"session_id": id, "format": "svg"}); !strings.Contains(svg["content"].(string), "frozen-42") {
		t.Errorf("ended session's svg lacks its last words: %v", svg["content"])
	}
}
