package record

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/sdk/abi"
)

func openTest(t testing.TB, maxFile, maxTotal int64) *Store {
	t.Helper()
	st, err := OpenStore(filepath.Join(t.TempDir(), "recs"), maxFile, maxTotal, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func newRec(t testing.TB, st *Store, id string) *Recorder {
	t.Helper()
	r, err := st.New(session.RecordInfo{ID: id, Kind: session.KindPTY, Peer: session.Peer{Command: "sh"}, Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	return r.(*Recorder)
}

func readBack(t *testing.T, path string) *Cast {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Every kind of event round-trips; a character cut between two chunks is
// written whole; invalid UTF-8 and control characters are valid JSON; the
// file and its directory are private.
func TestRecorderRoundTrip(t *testing.T) {
	st := openTest(t, 0, 0)
	r := newRec(t, st, "S1")
	r.Output([]byte("héllo \x1b[1mworld\x1b[0m\r\n\"q\" \\ "))
	r.Output([]byte("€"[:1]))
	r.Output([]byte("€"[1:2]))
	r.Output([]byte("€"[2:] + " \xff end"))
	r.Input([]byte("ls\r"))
	r.Resize(100, 30)
	code := 3
	r.Event(&session.Event{Type: abi.TypePrompt, Body: &abi.Prompt{Source: abi.SourceShell, ExitCode: &code}})
	r.Event(&session.Event{Type: abi.TypeOption, Body: &abi.Option{Option: "ECHO"}}) // no marker
	r.End("the process closed its terminal", &link.ExitStatus{Code: 3})
	c := readBack(t, r.Path())
	if c.Header.Version != 3 || c.Header.Term != (Term{80, 24, "xterm-256color"}) || c.Header.Command != "sh" {
		t.Errorf("header %+v", c.Header)
	}
	want := "héllo \x1b[1mworld\x1b[0m\r\n\"q\" \\ € \ufffd end"
	if got := c.Output(); got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	var seq []string
	for _, e := range c.Events {
		if e.Code != "o" {
			seq = append(seq, e.Code+":"+e.Data)
		}
	}
	if got := strings.Join(seq, "|"); got != "i:ls\r|r:100x30|m:prompt exit=3|m:end: the process closed its terminal|x:3" {
		t.Errorf("events %q", got)
	}
	for p, mode := range map[string]os.FileMode{st.Dir: 0o700, r.Path(): 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v, want %v (%v)", p, fi.Mode(), mode, err)
		}
	}
	var last float64
	for _, e := range c.Events {
		if e.Time < last {
			t.Fatalf("time goes back: %+v", c.Events)
		}
		last = e.Time
	}
}

// What is recorded reaches the file within FlushEvery, without a Close.
func TestRecorderFlushes(t *testing.T) {
	st := openTest(t, 0, 0)
	r := newRec(t, st, "S1")
	defer r.Close()
	r.Output([]byte("first"))
	deadline := time.Now().Add(FlushEvery + 2*time.Second)
	for {
		b, _ := os.ReadFile(r.Path())
		if bytes.Contains(b, []byte("first")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not written after %v: %q", FlushEvery+2*time.Second, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A recording stops at its size bound with a note in it, and records the
// end past it.
func TestRecorderFileBound(t *testing.T) {
	st := openTest(t, 4096, 0)
	r := newRec(t, st, "S1")
	line := bytes.Repeat([]byte("x"), 100)
	for range 200 {
		r.Output(line)
	}
	r.End("done", &link.ExitStatus{Code: 0})
	fi, err := os.Stat(r.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 4096+1024 {
		t.Errorf("%d bytes past a bound of 4096", fi.Size())
	}
	c := readBack(t, r.Path())
	b, _ := os.ReadFile(r.Path())
	if !bytes.Contains(b, []byte("termhost: recording stopped: this recording reached its size limit of 4096 bytes")) ||
		!bytes.Contains(b, []byte("\n# termhost: recording stopped")) {
		t.Errorf("no note of the bound:\n%s", b)
	}
	if e := c.Events[len(c.Events)-1]; e.Code != "x" {
		t.Errorf("last event %+v, want the exit", e)
	}
}

// Past the directory's bound the oldest finished recordings go; a live
// one over it alone is stopped with a note.
func TestStoreRotates(t *testing.T) {
	st := openTest(t, 0, 20_000)
	var paths []string
	for i := range 8 {
		r := newRec(t, st, "S"+string(rune('A'+i)))
		r.Output(bytes.Repeat([]byte("y"), 4000))
		r.End("", nil)
		paths = append(paths, r.Path())
		time.Sleep(2 * time.Millisecond) // names differ by their time
	}
	var total int64
	for _, f := range st.files() {
		total += f.size
	}
	if total > st.MaxTotal {
		t.Errorf("the directory holds %d bytes, over %d", total, st.MaxTotal)
	}
	if _, err := os.Stat(paths[0]); err == nil {
		t.Errorf("the oldest recording %s is still there", paths[0])
	}
	if _, err := os.Stat(paths[7]); err != nil {
		t.Errorf("the newest recording is gone: %v", err)
	}
	live := newRec(t, st, "LIVE")
	for range 30 {
		live.Output(bytes.Repeat([]byte("z"), 1000))
		live.flush()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(live.Path())
		if bytes.Contains(b, []byte("termhost: recording stopped: the recordings directory reached its limit")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live recording over the bound was not stopped: %d bytes", len(b))
		}
		live.flush()
		time.Sleep(20 * time.Millisecond)
	}
	live.Close()
}

// A last line cut short (the writer killed mid-write) ends the events; a
// bad line before the last is an error.
func TestReadTruncated(t *testing.T) {
	head := `{"version": 3, "term": {"cols": 80, "rows": 24}}` + "\n"
	c, err := Read(strings.NewReader(head + `[0.5, "o", "a"]` + "\n" + `# note` + "\n" + `[0.25, "o", "b`))
	if err != nil || len(c.Events) != 1 || c.Events[0].Time != 0.5 {
		t.Fatalf("truncated: %+v %v", c, err)
	}
	if _, err := Read(strings.NewReader(head + `[0.5, "o", "a` + "\n" + `[0.5, "o", "b"]` + "\n")); err == nil {
		t.Fatal("a bad line in the middle read without an error")
	}
}

// The v2 export: absolute times, width and height, an exit as a marker.
func TestWriteV2(t *testing.T) {
	c, err := Read(strings.NewReader(`{"version": 3, "term": {"cols": 90, "rows": 20, "type": "xterm"}, "timestamp": 7}` + "\n" +
		`[0.5, "o", "a"]` + "\n" + `[0.25, "r", "100x30"]` + "\n" + `[1, "x", "0"]` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteV2(&b, c); err != nil {
		t.Fatal(err)
	}
	want := `{"env":{"TERM":"xterm"},"height":20,"timestamp":7,"version":2,"width":90}` + "\n" +
		`[0.500000, "o", "a"]` + "\n" + `[0.750000, "r", "100x30"]` + "\n" + `[1.750000, "m", "exit 0"]` + "\n"
	if b.String() != want {
		t.Errorf("v2:\n%s\nwant:\n%s", b.String(), want)
	}
	back, err := Read(&b)
	if err != nil || back.Output() != "a" || back.Header.Term.Cols != 90 {
		t.Errorf("v2 read back: %+v %v", back, err)
	}
}

// Encoding output costs no allocation once the buffers have grown.
func TestRecorderOutputAllocs(t *testing.T) {
	st := openTest(t, 1<<40, 1<<40)
	r := newRec(t, st, "S1")
	defer r.Close()
	p := bytes.Repeat([]byte("the quick brown fox\r\n"), 1500)
	r.Output(p)
	r.flush()
	r.Output(p)
	r.flush()
	if n := testing.AllocsPerRun(50, func() { r.Output(p); r.flush() }); n > 0 {
		t.Errorf("%v allocations per output", n)
	}
}

func BenchmarkEscape(b *testing.B) {
	p := bytes.Repeat([]byte(strings.Repeat("the quick brown fox jumps over the lazy dog ", 2)[:78]+"\r\n"), 400)
	var out []byte
	b.SetBytes(int64(len(p)))
	defer cpuRate(b, len(p))()
	for b.Loop() {
		out = appendEscaped(out[:0], p)
	}
}

// appendEscaped is valid JSON for any bytes: what it decodes to is the
// input with each invalid byte as U+FFFD.
func TestEscapeAnyBytes(t *testing.T) {
	seed := uint64(1)
	for n := range 2000 {
		p := make([]byte, n%97)
		for i := range p {
			seed = seed*6364136223846793005 + 1442695040888963407
			p[i] = byte(seed >> 56)
			if seed&3 == 0 {
				p[i] = "ab\"\\\r\n\x1b~"[seed>>8%8]
			}
		}
		var want strings.Builder
		for q := p; len(q) > 0; {
			r, size := utf8.DecodeRune(q)
			want.WriteRune(r)
			q = q[size:]
		}
		var got string
		if err := json.Unmarshal(append(append([]byte{'"'}, appendEscaped(nil, p)...), '"'), &got); err != nil || got != want.String() {
			t.Fatalf("%q: got %q (%v), want %q", p, got, err, want.String())
		}
	}
}

// A directory others may write is refused; one termhost makes is 0700.
func TestStoreDirectory(t *testing.T) {
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	if _, err := OpenStore(open, 0, 0, nil); err == nil || !strings.Contains(err.Error(), "other users may write") {
		t.Errorf("a world-writable directory: %v", err)
	}
	if fi, _ := os.Stat(open); fi.Mode().Perm() != 0o777 {
		t.Errorf("the directory given was changed: %v", fi.Mode())
	}
	st := openTest(t, 0, 0)
	if fi, err := os.Stat(st.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("made: %v %v", fi.Mode(), err)
	}
}
