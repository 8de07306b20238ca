// @modelcontextprotocol/client 2.x: the 2026-07-28 era (server/discover,
// no MCP-Session-Id, per-request _meta, subscriptions/listen).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { main, steps } from './common.mjs';

await main(async (url, out) => {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: 'ts-client-2', version: '2.0.0' }, { versionNegotiation: { mode: 'auto' } });
  const updated = [];
  client.setNotificationHandler('notifications/resources/updated', (n) => { updated.push(n.params.uri); });
  await client.connect(transport);
  out.client = 'client-2';
  out.protocolVersion = client.getNegotiatedProtocolVersion();
  out.era = client.getProtocolEra();
  out.mcpSessionId = transport.sessionId ?? '';
  const subs = [];
  await steps(client, async (uri) => { subs.push(await client.listen({ resourceSubscriptions: [uri] })); }, updated, out);
  for (const s of subs) await s.close();
  await client.close();
});
