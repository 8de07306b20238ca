// @modelcontextprotocol/sdk 1.x: the 2025-11-25 era, over Streamable HTTP
// (argument: the URL; MCP-Session-Id, SSE, then DELETE of the MCP session)
// or over stdio as Claude Code, Claude Desktop, VS Code and Cursor start a
// server (arguments: the termhost binary, its cache directory, a pid file;
// see stdioSteps).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { connectTo, main, refused, steps, stdioSteps } from './common.mjs';

await main(async (_, out) => {
  const { stdio, transport, pidFile, bare } = connectTo(StdioClientTransport, StreamableHTTPClientTransport);
  if (!stdio) out.unauthorized = await refused(new Client({ name: 'ts-sdk-1', version: '1.0.0' }), bare());
  const client = new Client({ name: 'ts-sdk-1', version: '1.0.0' });
  const updated = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updated.push(n.params.uri); });
  if (stdio) {
    // The client tells an HTTP transport the negotiated version; a stdio
    // one takes it only if it has the method.
    transport.setProtocolVersion = (v) => { out.protocolVersion = v; };
  }
  await client.connect(transport);
  out.client = 'sdk-1';
  out.mcpSessionId = transport.sessionId ?? '';
  const subscribe = (uri) => client.subscribeResource({ uri });
  if (stdio) {
    await stdioSteps(client, subscribe, updated, out, transport._process, pidFile);
    return;
  }
  out.protocolVersion = transport.protocolVersion;
  await steps(client, subscribe, updated, out);
  await transport.terminateSession();
  out.terminated = transport.sessionId === undefined;
  await client.close();
});
