// termhost live view: every session of your token, live; one session
// full size with ?session=ID, where you can take the keyboard and give it
// back. Screens come over a WebSocket (/view/ws): a "reset" with the
// current screen as ANSI, then the session's output as binary messages.
//
// The page's credential is a key it keeps in this script's memory only —
// no cookie, no storage — so the browser sends it nowhere by itself: it
// goes in a header on the page's requests and as a WebSocket subprotocol,
// to this server only. The page gets it once, for the one-time code in
// its address's fragment (`termhost view` prints that address), and
// cleans the address at once. Moving between the list and one session
// stays in this page (history.pushState), so the key stays; a reload or
// another tab has no key and needs a new link.
"use strict";
(function () {
  const main = document.getElementById("sessions");
  const statusEl = document.getElementById("status");
  const noteEl = document.getElementById("note");
  const cards = new Map(); // id -> card
  let only = null; // the session shown full size, or null: the list
  let key = null; // the view key: in memory only
  let dead = false; // no key (any more): nothing more is asked
  // For tests and curious people: the terminals, by session id.
  window.termhostView = { cards, screenText, seen: {} };

  const newLink = "run `termhost view` for a new link";

  // The one-time code leaves the address (and so the history's entry)
  // before anything else happens.
  const code = new URLSearchParams(location.hash.slice(1)).get("login");
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // screenText is the visible screen of a session's terminal, one line
  // per row, trailing blanks trimmed (as view_screen's plain text).
  function screenText(id) {
    const c = cards.get(id);
    if (!c || !c.term) return null;
    const buf = c.term.buffer.active;
    const out = [];
    for (let i = 0; i < c.term.rows; i++) {
      const line = buf.getLine(buf.viewportY + i);
      out.push(line ? line.translateToString(true) : "");
    }
    return out.join("\n");
  }

  // noKey stops the page: the key is missing, unknown or expired.
  function noKey(why) {
    dead = true;
    document.body.dataset.auth = "none";
    statusEl.textContent = why + ": " + newLink;
    for (const c of cards.values()) close(c);
  }

  // headers are those of every request: the key, when there is one.
  function headers(h) {
    return key ? Object.assign({ "X-Termhost-View-Key": key }, h) : h || {};
  }

  // login exchanges the code in the address for the key.
  async function login() {
    if (!code) return true; // no code: a server without a token needs none, else the list says so
    try {
      // same-origin: under the page's no-referrer a POST would carry
      // Origin "null", which the server refuses.
      const r = await fetch("/view/login", { method: "POST", credentials: "omit", cache: "no-store",
        referrerPolicy: "same-origin", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ code }) });
      if (!r.ok) {
        noKey(r.status === 401 ? "This link was used or has expired (a link works once, within a minute)" : "The login failed (" + r.status + ")");
        return false;
      }
      key = (await r.json()).key;
      document.body.dataset.auth = "key";
      return true;
    } catch (e) {
      noKey("The login failed (" + e + ")");
      return false;
    }
  }

  // A link a program printed (OSC 8) opens in a new tab that gets nothing
  // of this page — no key (it is in memory), no opener, no referrer — and
  // never this server's own pages.
  function sameServer(u) {
    const port = (p, proto) => p || (proto === "https:" ? "443" : "80");
    const loop = (h) => h === "localhost" || h === "[::1]" || /^127\./.test(h);
    return port(u.port, u.protocol) === port(location.port, location.protocol) &&
      (u.hostname === location.hostname || (loop(u.hostname) && loop(location.hostname)));
  }
  function openLink(uri) {
    let u;
    try { u = new URL(uri); } catch { noteEl.textContent = "Not followed: not a link: " + uri; return; }
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      noteEl.textContent = "Not followed: only http and https links open from a terminal: " + u.href;
      return;
    }
    if (sameServer(u)) {
      noteEl.textContent = "Not followed: a link a program printed to this server itself: " + u.href;
      return;
    }
    if (!confirm("A program in this session printed a link to\n\n" + u.href +
      "\n\nOpen it in a new tab? It gets nothing from this page.")) return;
    window.open(u.href, "_blank", "noopener,noreferrer");
  }
  const linkHandler = { activate: (ev, uri) => openLink(uri), allowNonHttpProtocols: false };

  function makeCard(s) {
    const card = el("section", "card" + (only ? " full" : ""));
    card.dataset.session = s.id;
    const h = el("h2");
    const title = only ? el("span", "", s.name || s.id) : el("a", "", s.name || s.id);
    if (!only) {
      title.href = "/view?session=" + encodeURIComponent(s.id);
      title.onclick = follow;
    }
    const kind = el("span", "meta kind");
    const target = el("span", "meta target");
    const state = el("span", "meta state");
    const control = el("span", "control");
    h.append(title, kind, target, state, control);
    card.append(h);
    const c = { card, kind, target, state, control, term: null, ws: null, holder: "none", events: el("ul", "events") };
    if (only) {
      const bar = el("div", "bar");
      c.take = el("button", "", "Take control");
      c.take.id = "take";
      c.give = el("button", "", "Give back");
      c.give.id = "give";
      c.err = el("span", "error");
      c.take.onclick = () => send(c, { t: "take" });
      c.give.onclick = () => send(c, { t: "give" });
      bar.append(c.take, " ", c.give, " ", c.err);
      card.append(bar);
    }
    const screen = el("div", "screen");
    card.append(screen, c.events);
    c.screen = screen;
    main.append(card);
    cards.set(s.id, c);
    connect(c, s.id);
    update(c, s);
    return c;
  }

  function send(c, m) {
    if (c.ws && c.ws.readyState === WebSocket.OPEN) c.ws.send(JSON.stringify(m));
  }

  function close(c) {
    c.closed = true;
    if (c.ws) c.ws.close();
  }

  function setHolder(c, holder) {
    c.holder = holder;
    c.card.dataset.control = holder;
    if (c.term) {
      c.term.options.disableStdin = holder !== "you";
      if (holder === "you") c.term.focus();
    }
    if (c.take) {
      c.take.disabled = holder !== "none";
      c.give.disabled = holder !== "you";
    }
  }

  function connect(c, id) {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    // The key goes as a second subprotocol; the server answers with the first.
    const protocols = key ? ["termhost-view", "termhost-key." + key] : ["termhost-view"];
    const ws = new WebSocket(proto + "//" + location.host + "/view/ws?session=" + encodeURIComponent(id), protocols);
    ws.binaryType = "arraybuffer";
    c.ws = ws;
    ws.onmessage = (ev) => {
      if (typeof ev.data !== "string") {
        c.term && c.term.write(new Uint8Array(ev.data), () => mark(c, id));
        return;
      }
      const m = JSON.parse(ev.data);
      switch (m.t) {
        case "reset":
          if (!c.term) {
            c.term = new Terminal({ cols: m.cols, rows: m.rows, scrollback: 5000, disableStdin: true,
              fontSize: only ? 15 : 11, convertEol: false, cursorBlink: false, linkHandler });
            c.term.open(c.screen);
            c.term.onData((d) => { if (c.holder === "you") send(c, { t: "keys", data: d }); });
          } else {
            c.term.reset();
            c.term.resize(m.cols, m.rows);
          }
          c.term.write(m.data, () => { c.card.dataset.ready = "1"; mark(c, id); });
          setHolder(c, m.control);
          break;
        case "size":
          c.term && c.term.resize(m.cols, m.rows);
          break;
        case "control":
          setHolder(c, m.control);
          if (c.err) c.err.textContent = m.error || "";
          break;
        case "end":
          c.card.classList.add("state-terminated");
          if (m.error && c.err) c.err.textContent = m.error;
          break;
      }
    };
    ws.onclose = (ev) => {
      c.card.dataset.closed = "1";
      if (ev.code === 4401 && !dead) noKey("The view's key expired");
    };
  }

  // mark notes when a line "MARK<n>" first shows on a screen (the
  // latency figure of the browser test).
  function mark(c, id) {
    const text = screenText(id) || "";
    const re = /MARK(\d+)/g;
    let m;
    while ((m = re.exec(text)) !== null) {
      const k = id + ":" + m[1];
      if (!(k in window.termhostView.seen)) window.termhostView.seen[k] = Date.now();
    }
  }

  function update(c, s) {
    c.kind.textContent = s.kind;
    c.target.textContent = s.target;
    c.state.textContent = s.state;
    c.card.dataset.state = s.state;
    c.control.textContent = s.control === "person" ? "a person has the keyboard" : "agent";
    c.control.className = "control " + s.control;
    c.events.replaceChildren(...s.events.map((e) =>
      el("li", "", e.at.slice(11, 19) + " " + e.type + (e.fields ? " " + JSON.stringify(e.fields) : ""))));
  }

  // refresh lists the sessions (which also keeps the key alive).
  async function refresh() {
    if (dead) return;
    try {
      const r = await fetch("/view/sessions", { credentials: "omit", cache: "no-store", headers: headers() });
      if (r.status === 401) {
        noKey(key ? "The view's key expired" : "This page has no key (a reload or a new tab has none)");
        return;
      }
      if (!r.ok) { statusEl.textContent = "error " + r.status; return; }
      const { sessions } = await r.json();
      if (dead) return;
      statusEl.textContent = sessions.length + " session(s)";
      for (const s of sessions) {
        if (only && s.id !== only) continue;
        const c = cards.get(s.id) || makeCard(s);
        update(c, s);
      }
      if (only && !cards.has(only)) statusEl.textContent = "no session " + only + " of yours";
    } catch (e) {
      statusEl.textContent = String(e);
    }
  }

  // route shows what the address names: the list, or one session. Moving
  // between them stays in this page, which keeps the key.
  function route() {
    only = new URLSearchParams(location.search).get("session");
    for (const c of cards.values()) {
      close(c);
      if (c.term) c.term.dispose();
    }
    cards.clear();
    main.replaceChildren();
    noteEl.textContent = "";
    refresh();
  }
  function follow(ev) {
    if (ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return; // a new tab: it has no key
    ev.preventDefault();
    history.pushState(null, "", ev.currentTarget.getAttribute("href"));
    route();
  }
  for (const a of document.querySelectorAll("a[data-route]")) a.onclick = follow;
  window.addEventListener("popstate", route);

  login().then((ok) => {
    if (!ok) return;
    route();
    setInterval(refresh, 1000);
  });
})();
