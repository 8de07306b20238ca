// @modelcontextprotocol/sdk 1.x: the 2025-11-25 era (initialize,
// MCP-Session-Id, SSE), then DELETE of the MCP session.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { main, steps } from './common.mjs';

await main(async (url, out) => {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: 'ts-sdk-1', version: '1.0.0' });
  const updated = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updated.push(n.params.uri); });
  await client.connect(transport);
  out.client = 'sdk-1';
  out.protocolVersion = transport.protocolVersion;
  out.mcpSessionId = transport.sessionId ?? '';
  await steps(client, (uri) => client.subscribeResource({ uri }), updated, out);
  await transport.terminateSession();
  out.terminated = transport.sessionId === undefined;
  await client.close();
});
