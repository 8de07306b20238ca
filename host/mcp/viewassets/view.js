// termhost live view: every session of your token, live; one session
// full size with ?session=ID, where you can take the keyboard and give it
// back. Screens come over a WebSocket (/view/ws): a "reset" with the
// current screen as ANSI, then the session's output as binary messages.
"use strict";
(function () {
  const params = new URLSearchParams(location.search);
  const only = params.get("session");
  const main = document.getElementById("sessions");
  const statusEl = document.getElementById("status");
  const cards = new Map(); // id -> card
  // For tests and curious people: the terminals, by session id.
  window.termhostView = { cards, screenText, seen: {} };

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

  function makeCard(s) {
    const card = el("section", "card" + (only ? " full" : ""));
    card.dataset.session = s.id;
    const h = el("h2");
    const title = only ? el("span", "", s.name || s.id) : el("a", "", s.name || s.id);
    if (!only) title.href = "/view?session=" + encodeURIComponent(s.id);
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
    const ws = new WebSocket(proto + "//" + location.host + "/view/ws?session=" + encodeURIComponent(id));
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
              fontSize: only ? 15 : 11, convertEol: false, cursorBlink: false });
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
    ws.onclose = () => { c.card.dataset.closed = "1"; };
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

  async function refresh() {
    try {
      const r = await fetch("/view/sessions", { credentials: "same-origin", cache: "no-store" });
      if (!r.ok) { statusEl.textContent = "error " + r.status; return; }
      const { sessions } = await r.json();
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
  refresh();
  setInterval(refresh, 1000);
})();
