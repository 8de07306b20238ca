// Shared by both clients: the same steps, whatever the protocol era.
// Every step's outcome goes into one JSON object printed on stdout; the Go
// test (cmd/termhost/http_test.go) checks it.

import { readFileSync } from 'node:fs';

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

// stdioSteps is steps over stdio, then a program left running, then the
// client's close (stdin closed, SIGTERM after 2 s, SIGKILL after 2 more):
// out says how the server exited and how long the close took. proc is the
// server's child_process; pidFile receives the lingering program's pid.
export async function stdioSteps(client, subscribe, updated, out, proc, pidFile) {
  await steps(client, subscribe, updated, out);
  const sh = `echo $$ > '${pidFile}'; exec sleep 600`;
  const left = text(await client.callTool({ name: 'launch_app', arguments: { command: 'sh', args: ['-c', sh] } }));
  out.lingering = left.session_id;
  // The program is running once it wrote its pid: closing before that
  // would stop it before the test can know which process to look for.
  const written = () => { try { return readFileSync(pidFile, 'utf8').trim() !== ''; } catch { return false; } };
  await waitFor('the lingering program to write its pid', 10000, written);
  // The client escalates with proc.kill when the server has not exited
  // 2 s after its stdin closed: record whether it had to.
  out.signalsSent = [];
  const kill = proc.kill.bind(proc);
  proc.kill = (sig) => { out.signalsSent.push(sig ?? 'SIGTERM'); return kill(sig); };
  const started = Date.now();
  await client.close();
  await waitFor('the server to exit', 10000, () => proc.exitCode !== null || proc.signalCode !== null);
  out.closeMs = Date.now() - started;
  out.exitCode = proc.exitCode;
  out.signal = proc.signalCode ?? '';
}

// connectTo makes the transport the script's arguments ask for: a URL for
// Streamable HTTP, with the bearer token from TERMHOST_TOKEN sent as
// users configure it (requestInit: { headers }), or the termhost binary,
// its cache directory and a pid file (for stdioSteps) for stdio. Stdio and
// HTTP are the SDK's classes.
export function connectTo(Stdio, HTTP) {
  const [target, cacheDir, pidFile] = process.argv.slice(2);
  const stdio = !target.startsWith('http');
  const token = process.env.TERMHOST_TOKEN ?? '';
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = stdio
    ? new Stdio({ command: target, args: ['serve', '--cache-dir', cacheDir], stderr: 'ignore' })
    : new HTTP(new URL(target), { requestInit: { headers } });
  // A transport without the header, to check the server refuses it.
  const bare = stdio ? null : () => new HTTP(new URL(target));
  return { stdio, transport, pidFile, bare };
}

// refused reports whether connecting client over transport fails with 401.
export async function refused(client, transport) {
  try {
    await client.connect(transport);
  } catch (e) {
    return /401|nauthorized/.test(String(e?.message ?? e));
  } finally {
    await client.close().catch(() => {});
  }
  return false;
}
