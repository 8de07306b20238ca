// Shared by both clients: the same steps, whatever the protocol era.
// Every step's outcome goes into one JSON object printed on stdout; the Go
// test (cmd/termhost/http_test.go) checks it.

export function text(result) {
  return JSON.parse(result.content.map((c) => c.text ?? '').join(''));
}

export function waitFor(what, ms, check) {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const tick = () => {
      if (check()) return resolve(Date.now() - started);
      if (Date.now() - started > ms) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 10);
    };
    tick();
  });
}

// steps drives termhost through one connected client: tools/list, a tool
// call (launch_app of cat, send_keys, view_screen), and a subscription to
// the program's output resource that must see notifications/resources/updated.
// subscribe(uri) subscribes in the client's era; updated is the list the
// notification handler appends URIs to.
export async function steps(client, subscribe, updated, out) {
  const tools = await client.listTools();
  out.tools = tools.tools.length;
  out.hasLaunchApp = tools.tools.some((t) => t.name === 'launch_app');
  const launched = text(await client.callTool({ name: 'launch_app', arguments: { command: 'cat' } }));
  const id = launched.session_id;
  out.sessionId = id;
  const uri = `pty://session/${id}/output`;
  await subscribe(uri);
  // A 2025-era client receives the update on its standalone GET stream,
  // which it opens in the background after initialize; an update sent
  // before that stream is up is not replayed. Type until one arrives.
  for (let attempt = 0; !updated.includes(uri); attempt++) {
    await client.callTool({ name: 'send_keys', arguments: { session_id: id, text: 'from-typescript\r' } });
    try {
      await waitFor('notifications/resources/updated', 500, () => updated.includes(uri));
    } catch (e) {
      if (attempt >= 20) throw e;
    }
  }
  out.updated = uri;
  const view = text(await client.callTool({
    name: 'wait_for', arguments: { session_id: id, until: 'from-typescript', onScreen: true, timeoutMs: 10000 },
  }));
  out.waitReason = view.reason;
  const screen = text(await client.callTool({ name: 'view_screen', arguments: { session_id: id } }));
  out.screenHasText = JSON.stringify(screen).includes('from-typescript');
  await client.callTool({ name: 'stop_app', arguments: { session_id: id } });
}

export async function main(run) {
  const out = {};
  try {
    await run(process.argv[2], out);
    out.ok = true;
  } catch (e) {
    out.ok = false;
    out.error = String(e?.stack ?? e);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(out.ok ? 0 : 1);
}
