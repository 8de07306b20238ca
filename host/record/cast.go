// Package record writes and reads terminal recordings: asciicast v3
// (docs.asciinema.org/manual/asciicast/v3), one file per recorded session,
// written as it happens (Recorder), kept in one directory bounded in size
// (Store); and reads them back (Read) for `termhost rec`: the v2 export,
// replay and the final screen.
package record

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Header is an asciicast v3 header (the members termhost writes and
// reads).
type Header struct {
	Version   int    `json:"version"`
	Term      Term   `json:"term"`
	Timestamp int64  `json:"timestamp,omitempty"`
	Title     string `json:"title,omitempty"`
	Command   string `json:"command,omitempty"`
}

// Term is the header's terminal.
type Term struct {
	Cols int    `json:"cols"`
	Rows int    `json:"rows"`
	Type string `json:"type,omitempty"`
}

// Event is one event of a recording: Time is seconds since the start
// (v3 files store the interval since the previous event), Code one of
// o, i, m, r, x (others are kept as they are), Data its text.
type Event struct {
	Time float64
	Code string
	Data string
}

// Cast is a whole recording read back.
type Cast struct {
	Header Header
	Events []Event
}

// maxLine bounds one line of a recording read back (an event holds at
// most a walk's output, escaped).
const maxLine = 64 << 20

// Read reads an asciicast v3 or v2 recording. A last line cut short (a
// recording whose writer was killed mid-write) ends the events without an
// error; any other bad line is an error naming it.
func Read(r io.Reader) (*Cast, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("empty recording: no header")
	}
	var raw struct {
		Version   int     `json:"version"`
		Term      *Term   `json:"term"`
		Width     int     `json:"width"`
		Height    int     `json:"height"`
		Timestamp float64 `json:"timestamp"`
		Title     string  `json:"title"`
		Command   string  `json:"command"`
		Env       struct {
			Term string `json:"TERM"`
		} `json:"env"`
	}
	if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
		return nil, fmt.Errorf("line 1: not an asciicast header: %v", err)
	}
	c := &Cast{Header: Header{Version: raw.Version, Timestamp: int64(raw.Timestamp), Title: raw.Title, Command: raw.Command}}
	switch raw.Version {
	case 3:
		if raw.Term == nil {
			return nil, errors.New("line 1: a v3 header needs term.cols and term.rows")
		}
		c.Header.Term = *raw.Term
	case 2:
		c.Header.Term = Term{Cols: raw.Width, Rows: raw.Height, Type: raw.Env.Term}
	default:
		return nil, fmt.Errorf("line 1: asciicast version %d: only 2 and 3 are read", raw.Version)
	}
	if c.Header.Term.Cols < 1 || c.Header.Term.Rows < 1 {
		return nil, fmt.Errorf("line 1: terminal size %dx%d", c.Header.Term.Cols, c.Header.Term.Rows)
	}
	var now float64
	var pending error // a bad line is an error unless it is the last
	for n := 2; sc.Scan(); n++ {
		if pending != nil {
			return nil, pending
		}
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 || line[0] == '#' {
			continue
		}
		var ev [3]any
		if err := json.Unmarshal(line, &ev); err != nil {
			pending = fmt.Errorf("line %d: not an event: %v", n, err)
			continue
		}
		t, ok1 := ev[0].(float64)
		code, ok2 := ev[1].(string)
		data, ok3 := ev[2].(string)
		if !ok1 || !ok2 || !ok3 || t < 0 || math.IsInf(t, 0) {
			return nil, fmt.Errorf("line %d: an event is [time, code, data]", n)
		}
		if raw.Version == 3 {
			now += t
		} else {
			now = t
		}
		c.Events = append(c.Events, Event{Time: now, Code: code, Data: data})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return c, nil
}

// WriteV2 writes c as asciicast v2: absolute times, the header's width
// and height, events o, i, m, r (an exit, which v2 has no code for, as a
// marker).
func WriteV2(w io.Writer, c *Cast) error {
	bw := bufio.NewWriter(w)
	h := map[string]any{"version": 2, "width": c.Header.Term.Cols, "height": c.Header.Term.Rows}
	if c.Header.Timestamp != 0 {
		h["timestamp"] = c.Header.Timestamp
	}
	if c.Header.Title != "" {
		h["title"] = c.Header.Title
	}
	if c.Header.Command != "" {
		h["command"] = c.Header.Command
	}
	if c.Header.Term.Type != "" {
		h["env"] = map[string]string{"TERM": c.Header.Term.Type}
	}
	hb, _ := json.Marshal(h)
	bw.Write(hb)
	bw.WriteByte('\n')
	var line []byte
	for _, e := range c.Events {
		code, data := e.Code, e.Data
		switch code {
		case "o", "i", "m", "r":
		case "x":
			code, data = "m", "exit "+data
		default:
			continue
		}
		line = appendEvent(line[:0], int64(math.Round(e.Time*1e6)), code, []byte(data))
		bw.Write(line)
	}
	return bw.Flush()
}

// appendEvent appends one event line: [seconds, "code", "data"] with
// microseconds.
func appendEvent(b []byte, us int64, code string, data []byte) []byte {
	b = append(b, '[')
	b = appendSeconds(b, us)
	b = append(b, `, "`...)
	b = append(b, code...)
	b = append(b, `", "`...)
	b = appendEscaped(b, data)
	return append(b, "\"]\n"...)
}

// appendSeconds appends µs as seconds with six decimals.
func appendSeconds(b []byte, us int64) []byte {
	b = strconv.AppendInt(b, us/1e6, 10)
	b = append(b, '.')
	frac := us % 1e6
	for d := int64(100000); d > 0; d /= 10 {
		b = append(b, byte('0'+frac/d%10))
	}
	return b
}

// Output is the concatenation of a recording's output events: what a
// terminal replaying it is given.
func (c *Cast) Output() string {
	var b strings.Builder
	for _, e := range c.Events {
		if e.Code == "o" {
			b.WriteString(e.Data)
		}
	}
	return b.String()
}
