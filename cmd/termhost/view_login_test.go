package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/termhost/termhost/internal/testutil"
)

// The live view's credential (issue 33 item 3) in a real browser: what
// `termhost view` prints opens the view once, in one page, and nothing
// the browser sends by itself — to another port of the same host, to a
// link a program printed, from the history — opens it again.

// viewLink runs `termhost view` against srv and returns the address it
// prints.
func viewLink(t *testing.T, srv *httpServer, args ...string) string {
	t.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(srv.url, "http://"), "/mcp")
	out, err := exec.Command(binary, append([]string{"view", "--token-file", srv.tokenFile, "--http", addr}, args...)...).Output()
	if err != nil {
		t.Fatalf("termhost view: %v %s", err, out)
	}
	link := strings.TrimSpace(string(out))
	if !strings.HasPrefix(link, "http://"+addr+"/view") {
		t.Fatalf("termhost view printed %q", out)
	}
	return link
}

// catcher is another HTTP server on the loopback, as a program the agent
// started could run: it records every request it gets.
type catcher struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newCatcher(t *testing.T) *catcher {
	c := &catcher{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		c.mu.Lock()
		c.reqs = append(c.reqs, r.Clone(context.Background()))
		c.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		// The page reports whether it can reach the page that opened it,
		// and what it was told of where it came from.
		fmt.Fprint(w, `<!doctype html><title>elsewhere</title><p>another server</p>
<script>fetch("/report?opener=" + (window.opener !== null) + "&referrer=" + encodeURIComponent(document.referrer))</script>`)
	}))
	t.Cleanup(c.Close)
	return c
}

// got reports whether a request for path came.
func (c *catcher) got(path string) bool { return c.find(path) != nil }

// find is the first request for path.
func (c *catcher) find(path string) *http.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.reqs {
		if r.URL.Path == path {
			return r
		}
	}
	return nil
}

// paths are the paths of the requests the catcher got.
func (c *catcher) paths() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range c.reqs {
		out = append(out, r.URL.RequestURI())
	}
	return out
}

// leaks lists what of the view's credentials reached the catcher: a
// cookie at all (the browser's profile is new: any cookie of 127.0.0.1
// is the view's), the token or the login code anywhere in a request, and
// any request whose headers, replayed to the view, open its session list
// — what the agent's server did with the cookie it got.
func (c *catcher) leaks(t *testing.T, base, token, link string) []string {
	t.Helper()
	c.mu.Lock()
	reqs := append([]*http.Request(nil), c.reqs...)
	c.mu.Unlock()
	secrets := []string{token}
	if _, frag, ok := strings.Cut(link, "#"); ok {
		secrets = append(secrets, frag)
	}
	var out []string
	for _, r := range reqs {
		what := r.Method + " " + r.URL.String()
		if ck := r.Header.Get("Cookie"); ck != "" {
			out = append(out, fmt.Sprintf("%s came with Cookie: %s", what, ck))
		}
		dump := r.URL.String()
		for k, vs := range r.Header {
			dump += "\n" + k + ": " + strings.Join(vs, ", ")
		}
		for _, s := range secrets {
			if s != "" && strings.Contains(dump, s) {
				out = append(out, fmt.Sprintf("%s carries %q", what, s))
			}
		}
		replay, _ := http.NewRequest(http.MethodGet, base+"/view/sessions", nil)
		for k, vs := range r.Header {
			if k != "Origin" && k != "Referer" && !strings.HasPrefix(k, "Sec-Fetch") {
				replay.Header[k] = vs
			}
		}
		if resp, err := http.DefaultClient.Do(replay); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				out = append(out, fmt.Sprintf("the headers of %s, replayed, open the view's session list", what))
			}
		}
	}
	return out
}

// viewReady waits for a session's card to show its screen.
func viewReady(ctx context.Context, id string, full bool) chromedp.Action[chromedp.Void] {
	sel := fmt.Sprintf(`section.card[data-session=%q][data-ready="1"]`, id)
	if full {
		sel = fmt.Sprintf(`section.card.full[data-session=%q][data-ready="1"]`, id)
	}
	return chromedp.WaitVisible(chromedp.CSS(sel))
}

// acceptDialogs accepts every confirm the page asks, and counts them.
func acceptDialogs(ctx context.Context) func() []string {
	var mu sync.Mutex
	var seen []string
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			mu.Lock()
			seen = append(seen, ev.Message)
			mu.Unlock()
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// clickText moves the mouse onto the first cell of text on a session's
// screen in the page and clicks it, as a person clicks a link there.
func clickText(ctx context.Context, id, text string) error {
	type spot struct {
		X, Y  float64
		Found bool
	}
	js := fmt.Sprintf(`(() => {
		const c = document.querySelector('section.card[data-session=%q]');
		const card = window.termhostView && window.termhostView.cards.get(%q);
		const term = card && card.term;
		if (!c || !term) return {found: false};
		const buf = term.buffer.active;
		for (let i = 0; i < term.rows; i++) {
			const line = buf.getLine(buf.viewportY + i);
			const col = line ? line.translateToString(false).indexOf(%q) : -1;
			if (col < 0) continue;
			const r = c.querySelector('.xterm-screen').getBoundingClientRect();
			const w = r.width / term.cols, h = r.height / term.rows;
			return {x: r.left + (col + 0.5) * w, y: r.top + (i + 0.5) * h, found: true};
		}
		return {found: false};
	})()`, id, id, text)
	var at spot
	if !testutil.Poll(10*time.Second, func() bool {
		s, err := chromedp.Run(ctx, chromedp.Evaluate[spot](js))
		at = s
		return err == nil && s.Found
	}) {
		return fmt.Errorf("%q is not on the page's screen", text)
	}
	return chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, p := range []input.DispatchMouseEventParams{
			{Type: input.DispatchMouseEventTypeMouseMoved, X: at.X - 3, Y: at.Y},
			{Type: input.DispatchMouseEventTypeMouseMoved, X: at.X, Y: at.Y},
			{Type: input.DispatchMouseEventTypeMousePressed, X: at.X, Y: at.Y, Button: input.MouseButtonLeft, Buttons: 1, ClickCount: 1},
			{Type: input.DispatchMouseEventTypeMouseReleased, X: at.X, Y: at.Y, Button: input.MouseButtonLeft, ClickCount: 1},
		} {
			if _, err := cdp.Call(ctx, tg, input.DispatchMouseEvent, p); err != nil {
				return err
			}
			time.Sleep(50 * time.Millisecond) // xterm.js finds the link under the mouse on a frame
		}
		return nil
	}))
}

// TestViewCredentialStaysOnItsPort: with the view open, another server on
// another port of 127.0.0.1, visited in another tab, receives nothing that
// opens the view (issue 33 item 3: the view's cookie went to every port
// of the host, as cookies ignore ports and to SameSite another port is
// the same site).
func TestViewCredentialStaysOnItsPort(t *testing.T) {
	srv := startHTTP(t)
	base := strings.TrimSuffix(srv.url, "/mcp")
	cs := connectEra(t, srv, eraModern, nil)
	id := testutil.MustCall(t, cs, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)
	other := newCatcher(t)
	link := viewLink(t, srv)
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(link), viewReady(ctx, id, false)); err != nil {
		t.Fatalf("the view: %v", err)
	}
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	for _, p := range []string{"/", "/view", "/view/sessions", "/view?session=" + id} {
		if err := chromedp.Do(tab, chromedp.Navigate(other.URL+p)); err != nil {
			t.Fatalf("navigate to %s: %v", p, err)
		}
	}
	if !other.got("/view/sessions") {
		t.Fatalf("the other server did not get the requests: it got %v", other.paths())
	}
	if leaks := other.leaks(t, base, srv.token, link); len(leaks) > 0 {
		t.Fatalf("the other server got the view's credential:\n%s", strings.Join(leaks, "\n"))
	}
}

// TestViewLinkCarriesNothing: a program in a session prints an OSC 8 link
// to a server of its own on another port; the person clicks it in the
// view and accepts the confirm. That server gets nothing that opens the
// view (issue 33 item 3: it got the cookie, listed every session of the
// token, took control of one and typed into it), the tab it opens cannot
// reach the view's page (no opener) nor learn its address (no referrer).
// A link to the view's own server is not followed.
func TestViewLinkCarriesNothing(t *testing.T) {
	testutil.NeedProgram(t, "bash")
	srv := startHTTP(t)
	base := strings.TrimSuffix(srv.url, "/mcp")
	cs := connectEra(t, srv, eraModern, nil)
	id := testutil.MustCall(t, cs, "launch_app", map[string]any{"command": "bash", "args": []string{"--norc", "--noprofile"},
		"env": map[string]string{"PS1": "$ ", "HOME": t.TempDir()}, "cols": 100, "rows": 30})["session_id"].(string)
	other := newCatcher(t)
	link := viewLink(t, srv)
	ctx := browser(t)
	dialogs := acceptDialogs(ctx)
	// The list, then the session full size (a click); then the program
	// prints the links (after the page has the screen: the screen a page
	// starts from keeps no links).
	if err := chromedp.Do(ctx,
		chromedp.Navigate(link),
		viewReady(ctx, id, false),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`section.card[data-session=%q] h2 a`, id))),
		viewReady(ctx, id, true),
	); err != nil {
		t.Fatalf("the session in the view: %v", err)
	}
	osc8 := func(url, text string) string { return `\e]8;;` + url + `\e\\` + text + `\e]8;;\e\\` }
	testutil.MustCall(t, cs, "send_keys", map[string]any{"session_id": id,
		"text": `printf '` + osc8(other.URL+"/view/osc8", "CL''ICK-ME") + " and " + osc8(base+"/view?session="+id, "SAME''-SERVER") + `\n'` + "\r"})
	testutil.Eventually(t, 10*time.Second, "the links show", func() bool {
		return strings.Contains(agentScreen(t, cs, id), "CLICK-ME and SAME-SERVER\n")
	})
	if err := clickText(ctx, id, "CLICK-ME"); err != nil {
		t.Fatal(err)
	}
	if !testutil.Poll(10*time.Second, func() bool { return other.got("/view/osc8") }) {
		t.Fatalf("the link was not followed (dialogs: %q; screenshot %s)", dialogs(), screenshot(t, ctx))
	}
	if leaks := other.leaks(t, base, srv.token, link); len(leaks) > 0 {
		t.Fatalf("the program's server got the view's credential:\n%s", strings.Join(leaks, "\n"))
	}
	if !testutil.Poll(10*time.Second, func() bool { return other.got("/report") }) {
		t.Fatal("the linked page did not report")
	}
	if q := other.find("/report").URL.Query(); q.Get("opener") != "false" || q.Get("referrer") != "" {
		t.Fatalf("the linked page: opener reachable %s, referrer %q", q.Get("opener"), q.Get("referrer"))
	}
	asked := len(dialogs())
	// Back to the view's tab (the link opened another, in front).
	if _, err := chromedp.Call(ctx, page.BringToFront, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	if err := clickText(ctx, id, "SAME-SERVER"); err != nil {
		t.Fatal(err)
	}
	var note string
	if !testutil.Poll(10*time.Second, func() bool {
		note, _ = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#note")))
		return note != ""
	}) || !strings.Contains(note, "Not followed") || len(dialogs()) != asked {
		t.Fatalf("a link to the view's own server: the page says %q, dialogs %q", note, dialogs())
	}
}

// TestViewLinkOpensOnce: the address `termhost view` prints opens the view
// once: the address bar then holds no credential, and the same address
// opened again — another tab, another browser, the history — opens
// nothing; neither does the view's list opened in another tab. The page
// that logged in goes on working.
func TestViewLinkOpensOnce(t *testing.T) {
	srv := startHTTP(t)
	base := strings.TrimSuffix(srv.url, "/mcp")
	cs := connectEra(t, srv, eraModern, nil)
	id := testutil.MustCall(t, cs, "launch_app", map[string]any{"command": "cat"})["session_id"].(string)
	link := viewLink(t, srv)
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(link), viewReady(ctx, id, false)); err != nil {
		t.Fatalf("the view: %v", err)
	}
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); strings.Contains(loc, srv.token) || strings.Contains(loc, "#") {
		t.Fatalf("the address bar holds %q after the login", loc)
	}
	// status is what the page says in its header once it has tried.
	status := func(ctx context.Context) string {
		var s string
		testutil.Poll(10*time.Second, func() bool {
			s, _ = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#status")))
			return strings.TrimSpace(s) != ""
		})
		return s
	}
	opened := func(s string) bool { return strings.HasSuffix(strings.TrimSpace(s), "session(s)") }
	if s := status(ctx); !opened(s) {
		t.Fatalf("the view says %q", s)
	}
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	if err := chromedp.Do(tab, chromedp.Navigate(link)); err != nil {
		t.Fatal(err)
	}
	if s := status(tab); opened(s) || !strings.Contains(s, "termhost view") {
		t.Fatalf("the address opened a second time (another tab) says %q; want it to say to run `termhost view`", s)
	}
	for _, p := range []string{"/view/sessions", "/view/ws?session=" + id} {
		resp, err := chromedp.RunResponse(tab, chromedp.Navigate(base+p))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status == http.StatusOK {
			t.Fatalf("%s in another tab of the browser that logged in: %d", p, resp.Status)
		}
	}
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/view?session="+id)); err != nil {
		t.Fatal(err)
	}
	if s := status(tab); opened(s) {
		t.Fatalf("the session's address in another tab says %q", s)
	}
	other := browser(t)
	if err := chromedp.Do(other, chromedp.Navigate(link)); err != nil {
		t.Fatal(err)
	}
	if s := status(other); opened(s) {
		t.Fatalf("the address opened a second time (another browser) says %q", s)
	}
	// The page that logged in goes on: the agent's output shows.
	testutil.MustCall(t, cs, "send_keys", map[string]any{"session_id": id, "text": "still-here\r"})
	testutil.Eventually(t, 10*time.Second, "the first page still shows the session", func() bool {
		s, _ := pageScreen(ctx, id)
		return strings.Contains(s, "still-here")
	})
	// Reloaded, it has no key any more, and says what to do.
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	if s := status(ctx); opened(s) || !strings.Contains(s, "termhost view") {
		t.Fatalf("the page reloaded says %q; want it to say to run `termhost view`", s)
	}
}
