// @modelcontextprotocol/client 2.x over stdio: the 2026-07-28 era.
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { main, stdioSteps } from './common.mjs';

await main(async (binary, out) => {
  const [cacheDir, pidFile] = process.argv.slice(3);
  const transport = new StdioClientTransport({ command: binary, args: ['serve', '--cache-dir', cacheDir], stderr: 'ignore' });
  const client = new Client({ name: 'ts-client-2', version: '2.0.0' }, { versionNegotiation: { mode: 'auto' } });
  const updated = [];
  client.setNotificationHandler('notifications/resources/updated', (n) => { updated.push(n.params.uri); });
  await client.connect(transport);
  out.client = 'client-2';
  out.protocolVersion = client.getNegotiatedProtocolVersion();
  out.era = client.getProtocolEra();
  const proc = transport._process;
  await stdioSteps(client, async (uri) => { await client.listen({ resourceSubscriptions: [uri] }); }, updated, out, proc, pidFile);
});
