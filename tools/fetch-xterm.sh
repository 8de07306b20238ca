#!/usr/bin/env bash
# Vendors xterm.js for the live view (/view of `serve --http`): the built
# files the page loads (xterm.js, xterm.css) and its MIT license, into
# host/mcp/viewassets, which the binary embeds (go:embed). Run it once to
# change the version (make xterm); the files are committed, so building
# termhost never needs npm or a network, and the page loads nothing from a
# CDN.
set -euo pipefail
VERSION="${XTERM_VERSION:-6.0.0}"
cd "$(dirname "$0")/.."
dest=host/mcp/viewassets
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "@xterm/xterm@$VERSION" >/dev/null && tar xzf xterm-xterm-*.tgz)
cp "$tmp/package/lib/xterm.js" "$dest/xterm.js"
cp "$tmp/package/css/xterm.css" "$dest/xterm.css"
cp "$tmp/package/LICENSE" "$dest/XTERM-LICENSE"
echo "$VERSION" > "$dest/XTERM-VERSION"
echo "vendored @xterm/xterm $VERSION into $dest"
