// @modelcontextprotocol/sdk 1.x over stdio: the 2025-11-25 era, the way
// Claude Code, Claude Desktop, VS Code and Cursor start a server.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { main, stdioSteps } from './common.mjs';

await main(async (binary, out) => {
  const [cacheDir, pidFile] = process.argv.slice(3);
  const transport = new StdioClientTransport({ command: binary, args: ['serve', '--cache-dir', cacheDir], stderr: 'ignore' });
  const client = new Client({ name: 'ts-sdk-1', version: '1.0.0' });
  const updated = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updated.push(n.params.uri); });
  // The client tells the transport the negotiated version when it can.
  transport.setProtocolVersion = (v) => { out.protocolVersion = v; };
  await client.connect(transport);
  out.client = 'sdk-1';
  const proc = transport._process;
  await stdioSteps(client, (uri) => client.subscribeResource({ uri }), updated, out, proc, pidFile);
});
