package session

import (
	"context"
	"fmt"
	"testing"

	"github.com/termhost/termhost/host/plugin"
)

// screenViews is everything the tools read of a screen: the visible rows
// plain and with SGR (with the cursor, size, title, modes and which
// screen is shown), and the whole scrollback plain and with SGR.
func screenViews(t *testing.T, name string, v *vtSession) []string {
	t.Helper()
	var out []string
	for _, req := range []string{
		`{"op":"screen","format":"plain"}`,
		`{"op":"screen","format":"ansi"}`,
		`{"op":"scrollback","format":"plain","offset":0,"limit":100000}`,
		`{"op":"scrollback","format":"ansi","offset":0,"limit":100000}`,
	} {
		rep, err := v.s.Screen(context.Background(), []byte(req))
		if err != nil {
			t.Fatalf("%s: %s: %v", name, req, err)
		}
		out = append(out, string(rep))
	}
	return out
}

func sameViews(t *testing.T, name string, got, want []string) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: view %d differs:\n got %.600s\nwant %.600s", name, i, got[i], want[i])
		}
	}
}

// vtInfo is the vt plugin's sessions and instances.
func vtInfo(t *testing.T, pr *plugin.Registry) plugin.Info {
	t.Helper()
	for _, in := range pr.List() {
		if in.Name == "vt" && in.Current {
			return in
		}
	}
	t.Fatal("no vt plugin")
	return plugin.Info{}
}

// tuiDraw is a full-screen program: the alternate screen, a scroll
// region, boxes drawn with CUP in colour, a hidden cursor left mid-screen,
// a title, and a saved cursor.
func tuiDraw(round int) []byte {
	b := []byte("\x1b]0;top - round " + fmt.Sprint(round) + "\x07\x1b[?1049h\x1b[?25l\x1b[2J\x1b[3;20r")
	for row := 1; row <= 24; row += 3 {
		b = fmt.Appendf(b, "\x1b[%d;%dH\x1b[1;3%d;4%dm[%02d:%02d]\x1b[0m", row, 1+(row*7+round)%60, row%8, (row+round)%8, row, round)
	}
	return append(b, "\x1b7\x1b[12;40H\x1b[4mcursor here\x1b[24m"...)
}

// TestIdleScreenLeavesInstance: an idle session's screen leaves the
// shared vt instance (the instance holds none of them after the idle
// sweep) and reads exactly the same afterwards — plain and with SGR, the
// cursor, modes, title, a TUI's alternate screen drawn with CUP, the
// scrollback — and output after the eviction lands on the restored screen
// as on a screen that never left (a session opened after, fed the same
// bytes). Issue 19: an idle session's screen must not hold a share of a
// vt instance.
func TestIdleScreenLeavesInstance(t *testing.T) {
	pr := vtPlugins(t, 0)
	r := newRegistry(t, Limits{}, Config{Plugins: Plugins{Screen: "vt"}})
	var sessions []*vtSession
	var streams [][]byte
	for i := range 6 { // two instances' worth with the manifest's 4 per instance
		v, err := openVT(t, r, pr, 80, 24)
		if err != nil {
			t.Fatal(err)
		}
		p := smallOutput(i)
		if i%2 == 1 {
			p = append(p, tuiDraw(i)...)
		}
		v.feed(t, p)
		sessions = append(sessions, v)
		streams = append(streams, p)
	}
	// One resized after its output: the size is part of what comes back.
	if err := sessions[2].s.Resize(context.Background(), 100, 30); err != nil {
		t.Fatal(err)
	}
	sessions[2].cols, sessions[2].rows = 100, 30
	before := make([][]string, len(sessions))
	for i, v := range sessions {
		if u := v.s.UntrustedPlugins(); len(u) != 0 {
			t.Fatalf("session %d: untrusted plugins %v", i, u)
		}
		before[i] = screenViews(t, fmt.Sprintf("session %d before", i), v)
	}
	if in := vtInfo(t, pr); in.Sessions != len(sessions) {
		t.Fatalf("vt holds %d sessions before the sweep, want %d", in.Sessions, len(sessions))
	}

	r.FreezeIdle(0)
	for i, v := range sessions {
		if u := v.s.UntrustedPlugins(); len(u) != 0 {
			t.Fatalf("session %d: its screen away, untrusted plugins %v", i, u)
		}
	}
	if in := vtInfo(t, pr); in.Sessions != 0 || in.Instances > 1 {
		t.Fatalf("after the idle sweep vt holds %d sessions on %d instances; want none on at most the pool's one", in.Sessions, in.Instances)
	}
	for i, v := range sessions {
		t.Logf("session %d: %d bytes of deflated state kept", i, len(v.s.screen.(*screenSlot).state()))
		sameViews(t, fmt.Sprintf("session %d read after leaving the instance", i), screenViews(t, "after", v), before[i])
	}
	if in := vtInfo(t, pr); in.Sessions != len(sessions) {
		t.Fatalf("vt holds %d sessions after every screen was read, want %d", in.Sessions, len(sessions))
	}

	// Evicted again, then more output (a TUI redraw; plain lines): the
	// output's walk brings the screen back first.
	r.FreezeIdle(0)
	for i, v := range sessions {
		p := fmt.Appendf(nil, "\x1b[5;5Hround two %d\r\nmore\r\n", i)
		if i%2 == 1 {
			p = append(p, tuiDraw(i+10)...)
		}
		v.feed(t, p)
		streams[i] = append(streams[i], p...)
	}
	r.FreezeIdle(0)
	for i, v := range sessions {
		if i == 2 {
			continue // resized midway: no fresh session sees the same
		}
		fresh, err := openVT(t, r, pr, 80, 24)
		if err != nil {
			t.Fatal(err)
		}
		fresh.feed(t, streams[i])
		sameViews(t, fmt.Sprintf("session %d, evicted twice, against one that never left", i), screenViews(t, "evicted", v), screenViews(t, "fresh", fresh))
		fresh.s.Close()
	}
}

// TestEvictedScreenRebuiltFromBuffer: a screen whose state cannot come
// back — the kept state is unreadable, or no binding could be opened while
// output went by — is rebuilt from the raw buffer, as after a failed
// instance, and shows what a fresh emulator fed the buffer shows.
func TestEvictedScreenRebuiltFromBuffer(t *testing.T) {
	pr := vtPlugins(t, 0)
	r := newRegistry(t, Limits{}, Config{Plugins: Plugins{Screen: "vt"}})
	bad, err := openVT(t, r, pr, 80, 24)
	if err != nil {
		t.Fatal(err)
	}
	bad.feed(t, smallOutput(1))
	gone, err := openVT(t, r, pr, 80, 24)
	if err != nil {
		t.Fatal(err)
	}
	gone.feed(t, smallOutput(2))
	r.FreezeIdle(0)

	// The kept state is damaged: the next view rebuilds from the buffer.
	sl := bad.s.screen.(*screenSlot)
	sl.mu.Lock()
	if sl.away == nil {
		sl.mu.Unlock()
		t.Fatal("the screen did not leave its instance")
	}
	sl.away = []byte("not a deflated state")
	sl.mu.Unlock()
	checkScreen(t, "a screen whose kept state was unreadable", bad)

	// No binding can be opened while output arrives: the output is in the
	// buffer, the screen behind it, and the next use rebuilds it.
	reattach := gone.s.reattachScreen
	gone.s.reattachScreen = func() (Binding, error) { return nil, fmt.Errorf("the plugin is away") }
	gone.feed(t, []byte("\x1b[31mwhile the screen could not be opened\x1b[0m\r\n$ "))
	gone.s.reattachScreen = reattach
	checkScreen(t, "a screen that missed output", gone)
}
