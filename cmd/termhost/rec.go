package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/termhost/termhost/host"
	"github.com/termhost/termhost/host/plugin"
	"github.com/termhost/termhost/host/record"
	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/sdk/abi"
)

// recordOptions are serve's recording flags.
type recordOptions struct {
	dir             string
	maxFile, maxAll int
}

func (o *recordOptions) register(fs *flags) {
	fs.StringVar(&o.dir, "record-dir", "", "record every session from its start, one asciicast v3 file each, into this `dir`ectory (also where record:true and record_start write; default <user data dir>/termhost/recordings)")
	fs.env("record-dir", "TERMHOST_RECORD_DIR")
	fs.IntVar(&o.maxFile, "record-max-file-mb", 64, "stop a recording at this many MiB, with a note in it")
	fs.env("record-max-file-mb", "TERMHOST_RECORD_MAX_FILE_MB")
	fs.IntVar(&o.maxAll, "record-max-total-mb", 1024, "keep the recordings directory under this many MiB: the oldest finished recordings are deleted")
	fs.env("record-max-total-mb", "TERMHOST_RECORD_MAX_TOTAL_MB")
}

func (o *recordOptions) config(cfg *host.Config) error {
	if o.maxFile < 1 || o.maxAll < 1 {
		return usagef("record-max-file-mb and record-max-total-mb must be at least 1")
	}
	cfg.RecordDir, cfg.RecordAll = o.dir, o.dir != ""
	cfg.RecordMaxFile, cfg.RecordMaxTotal = int64(o.maxFile)<<20, int64(o.maxAll)<<20
	return nil
}

// The rec commands read a recording back.

// recFile opens and reads a recording named on the command line.
func recFile(path string) (*record.Cast, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := record.Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// recConvertFlags: termhost rec convert --v2 IN OUT.
func recConvertFlags(fs *flags) func(stdout, stderr io.Writer) error {
	fs.positional = true
	v2 := fs.Bool("v2", false, "write asciicast v2 (the only conversion there is; for players that read only v2)")
	return func(stdout, _ io.Writer) error {
		if !*v2 {
			return usagef("rec convert: say the format to write: --v2")
		}
		if fs.NArg() != 2 {
			return usagef("rec convert: expected IN and OUT (\"-\" for standard output), got %d arguments", fs.NArg())
		}
		c, err := recFile(fs.Arg(0))
		if err != nil {
			return err
		}
		if fs.Arg(1) == "-" {
			return record.WriteV2(stdout, c)
		}
		f, err := os.OpenFile(fs.Arg(1), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if err := record.WriteV2(f, c); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
}

// recPlayFlags: termhost rec play FILE writes the recording's output to
// the terminal with its timing.
func recPlayFlags(fs *flags) func(stdout, stderr io.Writer) error {
	fs.positional = true
	speed := fs.Float64("speed", 1, "play this many times faster")
	idle := fs.Duration("idle-limit", 0, "shorten every pause to at most this long (0: as recorded)")
	return func(stdout, _ io.Writer) error {
		if fs.NArg() != 1 {
			return usagef("rec play: expected one FILE, got %d arguments", fs.NArg())
		}
		if !(*speed > 0) || *speed > 1e6 {
			return usagef("rec play: speed %v: expected more than 0, at most 1000000", *speed)
		}
		if *idle < 0 {
			return usagef("rec play: idle-limit %v: must not be negative", *idle)
		}
		c, err := recFile(fs.Arg(0))
		if err != nil {
			return err
		}
		return record.Play(stdout, c, *speed, *idle)
	}
}

// recTextFlags: termhost rec text FILE prints the recording's final
// screen, as the server's own screen (the vt plugin) shows it.
func recTextFlags(fs *flags) func(stdout, stderr io.Writer) error {
	fs.positional = true
	var po pluginOptions
	po.register(fs)
	return func(stdout, stderr io.Writer) error {
		if fs.NArg() != 1 {
			return usagef("rec text: expected one FILE, got %d arguments", fs.NArg())
		}
		c, err := recFile(fs.Arg(0))
		if err != nil {
			return err
		}
		cfg, err := po.config(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
		if err != nil {
			return err
		}
		text, err := recScreen(c, cfg)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, text)
		return err
	}
}

// recScreen replays a recording's output and resizes into the screen
// plugin, loaded as the server loads it, and returns the final screen's
// plain text as view_screen shows it.
func recScreen(c *record.Cast, cfg host.Config) (string, error) {
	ctx := context.Background()
	reg, err := plugin.Open(ctx, plugin.Config{Embedded: onlyPlugin{cfg.Plugins, "vt"}, Dir: cfg.PluginDir, Pins: cfg.PluginPins,
		CacheDir: cfg.CacheDir, Logger: cfg.Logger, UnguardedEmbedded: cfg.UnguardedEmbedded})
	if err != nil {
		return "", fmt.Errorf("plugins: %w", err)
	}
	defer reg.Close()
	cols, rows := c.Header.Term.Cols, c.Header.Term.Rows
	if err := session.CheckSize(cols, rows); err != nil {
		return "", err
	}
	opts, _ := json.Marshal(map[string]any{"cols": cols, "rows": rows})
	b, err := reg.Attach("vt", abi.KindPTY, opts)
	if err != nil {
		return "", fmt.Errorf("screen plugin: %w", err)
	}
	defer b.Close()
	var drop dropEmissions
	for _, e := range c.Events {
		switch e.Code {
		case "o":
			for p := []byte(e.Data); len(p) > 0; {
				n := min(len(p), 32<<10)
				if _, err := b.Data(abi.Inbound, p[:n], &drop); err != nil {
					return "", fmt.Errorf("screen plugin: %w", err)
				}
				p = p[n:]
			}
		case "r":
			var cl, rw int
			if _, err := fmt.Sscanf(e.Data, "%dx%d", &cl, &rw); err != nil || cl < 1 || rw < 1 || session.CheckSize(cl, rw) != nil {
				continue
			}
			req, _ := json.Marshal(map[string]any{"op": "resize", "cols": cl, "rows": rw})
			if err := b.Control(req, &drop); err != nil {
				return "", fmt.Errorf("screen plugin: %w", err)
			}
		}
	}
	var reply replyOnly
	if err := b.Control([]byte(`{"op":"screen","format":"plain"}`), &reply); err != nil {
		return "", fmt.Errorf("screen plugin: %w", err)
	}
	var scr struct {
		Lines []string `json:"lines"`
	}
	if err := json.Unmarshal(reply.p, &scr); err != nil {
		return "", fmt.Errorf("screen plugin's answer: %w", err)
	}
	n := len(scr.Lines)
	for n > 0 && scr.Lines[n-1] == "" {
		n--
	}
	return strings.Join(scr.Lines[:n], "\n"), nil
}

// onlyPlugin is the embedded plugins without all but one (the others are
// not compiled).
type onlyPlugin struct {
	fsys fs.FS
	name string
}

func (o onlyPlugin) Open(name string) (fs.File, error) {
	if name != "." && !strings.HasPrefix(name, o.name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return o.fsys.Open(name)
}

func (o onlyPlugin) ReadDir(name string) ([]fs.DirEntry, error) {
	ents, err := fs.ReadDir(o.fsys, name)
	if name != "." {
		return ents, err
	}
	var out []fs.DirEntry
	for _, e := range ents {
		if e.Name() == o.name {
			out = append(out, e)
		}
	}
	return out, err
}

type dropEmissions struct{}

func (*dropEmissions) Emit(abi.Stream, []byte) {}
func (*dropEmissions) Discard()                {}

type replyOnly struct{ p []byte }

func (r *replyOnly) Emit(s abi.Stream, p []byte) {
	if s == abi.Reply && r.p == nil {
		r.p = append([]byte(nil), p...)
	}
}
func (r *replyOnly) Discard() { r.p = nil }
