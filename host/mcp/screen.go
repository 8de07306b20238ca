package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/termhost/termhost/host/session"
)

// screenReply is the screen plugin's answer to a query (plugins/vt).
type screenReply struct {
	Cols          int      `json:"cols"`
	Rows          int      `json:"rows"`
	Cursor        position `json:"cursor"`
	CursorVisible bool     `json:"cursorVisible"`
	AltScreen     bool     `json:"altScreen"`
	Title         string   `json:"title"`
	Modes         struct {
		AppCursor      bool `json:"appCursor"`
		AppKeypad      bool `json:"appKeypad"`
		BracketedPaste bool `json:"bracketedPaste"`
		Mouse          int  `json:"mouse"`
	} `json:"modes"`
	Lines   []string `json:"lines"`
	Wrapped []int    `json:"wrapped"`
	Total   int      `json:"total"`
	History int      `json:"history"`
	Offset  int      `json:"offset"`
}

// position is a 0-based cursor position.
type position struct {
	Row int `json:"row"`
	Col int `json:"col"`
}

// queryScreen asks the session's screen plugin (op "screen", "modes" or
// "scrollback").
func (s *Server) queryScreen(ctx context.Context, sess *session.Session, req map[string]any) (screenReply, error) {
	var rep screenReply
	b, err := json.Marshal(req)
	if err != nil {
		return rep, fmt.Errorf("%w: %v", errInternal, err)
	}
	out, err := sess.Screen(ctx, b)
	if err != nil {
		return rep, err
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return rep, fmt.Errorf("%w: the screen plugin's answer is not valid: %v", errInternal, err)
	}
	return rep, nil
}

// screenText is the plain screen as one string, rows joined by newlines,
// trailing empty rows dropped.
func screenText(lines []string) string {
	n := len(lines)
	for n > 0 && lines[n-1] == "" {
		n--
	}
	return strings.Join(lines[:n], "\n")
}

// matchText is the plain screen as a pattern on it sees it: as a person
// reading the screen would, the cursor's row runs up to the cursor, so the
// blank a prompt ends with (`$ `) is there although rows are sent without
// their trailing blanks. Other rows are as screenText gives them.
func matchText(rep screenReply) string {
	lines := rep.Lines
	if r := rep.Cursor.Row; r >= 0 && r < len(lines) {
		if pad := rep.Cursor.Col - session.Cells(lines[r]); pad > 0 {
			lines = append([]string(nil), lines...)
			lines[r] += strings.Repeat(" ", pad)
		}
	}
	return screenText(lines)
}

// rowChange is one row that changed since the client's last view.
type rowChange struct {
	Row  int    `json:"row"`
	Text string `json:"text"`
}
