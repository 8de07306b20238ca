// @modelcontextprotocol/client 2.x: the 2026-07-28 era (server/discover,
// no MCP-Session-Id, per-request _meta, subscriptions/listen), over
// Streamable HTTP (argument: the URL) or over stdio (arguments: the
// termhost binary, its cache directory, a pid file; see stdioSteps).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { connectTo, main, refused, steps, stdioSteps } from './common.mjs';

await main(async (_, out) => {
  const { stdio, transport, pidFile, bare } = connectTo(StdioClientTransport, StreamableHTTPClientTransport);
  if (!stdio) {
    out.unauthorized = await refused(new Client({ name: 'ts-client-2', version: '2.0.0' }, { versionNegotiation: { mode: 'auto' } }), bare());
  }
  const client = new Client({ name: 'ts-client-2', version: '2.0.0' }, { versionNegotiation: { mode: 'auto' } });
  const updated = [];
  client.setNotificationHandler('notifications/resources/updated', (n) => { updated.push(n.params.uri); });
  await client.connect(transport);
  out.client = 'client-2';
  out.protocolVersion = client.getNegotiatedProtocolVersion();
  out.era = client.getProtocolEra();
  out.mcpSessionId = transport.sessionId ?? '';
  const subs = [];
  const subscribe = async (uri) => { subs.push(await client.listen({ resourceSubscriptions: [uri] })); };
  if (stdio) {
    await stdioSteps(client, subscribe, updated, out, transport._process, pidFile);
    return;
  }
  await steps(client, subscribe, updated, out);
  for (const s of subs) await s.close();
  await client.close();
});
