# termhost — see README.md. Plugins are built reproducibly and committed;
# `check-plugins` proves each committed .wasm matches a fresh build.
GO       ?= go
PLUGINS  := plugins/telnet plugins/shell plugins/vt plugins/ssh plugins/dialect sdk/examples/upper
BENCHTIME ?= 1s

.PHONY: all build install plugins check-plugins test test-wasm test-short bench demo vet fmt clean

all: build

# build and install embed the committed plugins: only Go is needed (the
# plugins built with TinyGo need LLVM to rebuild; make plugins does that,
# and make check-plugins proves the committed ones match their source).
build:
	$(GO) build -trimpath -o bin/termhost ./cmd/termhost

# go install's directory: GOBIN, else GOPATH/bin (~/go/bin), which MCP
# clients find when it is on PATH.
install:
	$(GO) install -trimpath ./cmd/termhost
	@echo "installed $$( d=$$($(GO) env GOBIN); [ -n "$$d" ] || d=$$($(GO) env GOPATH)/bin; echo $$d )/termhost"

plugins:
	@for p in $(PLUGINS); do echo "wasmbuild $$p"; $(GO) run ./sdk/cmd/wasmbuild $$p || exit 1; done

# wasmbuild pins the Go toolchain to the one go.mod names (see
# sdk/cmd/wasmbuild), so this holds whatever Go runs make; it exits 3 when a
# file differs and 1 when it could not build at all.
check-plugins:
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(GO) build -o "$$tmp/wasmbuild" ./sdk/cmd/wasmbuild || exit 1; \
	for p in $(PLUGINS); do \
	  "$$tmp/wasmbuild" -check $$p; rc=$$?; \
	  if [ $$rc -eq 3 ]; then \
	    echo "check-plugins: $$p/$$(basename $$p).wasm is not what its source builds to (if you changed the source, 'make plugins' rebuilds it)"; exit 1; \
	  elif [ $$rc -ne 0 ]; then exit $$rc; fi; \
	done

# staticcheck is a tool dependency of the module (go.mod's tool line), so
# `go mod download` fetches it. For wasip1 the checker is built for this
# machine (go tool -n) and run with the plugins' GOOS.
vet:
	$(GO) vet ./...
	GOOS=wasip1 GOARCH=wasm $(GO) vet ./plugins/... ./sdk/examples/...
	$(GO) tool staticcheck ./...
	sc=$$($(GO) tool -n staticcheck) && GOOS=wasip1 GOARCH=wasm "$$sc" ./plugins/... ./sdk/...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }

# Tests compile plugins into one cache directory per run (TERMHOST_CACHE_DIR),
# removed afterwards: nothing is left in the user's cache directory.
TESTCACHE = cache=$$(mktemp -d "$${TMPDIR:-/tmp}/termhost-test-cache.XXXXXX") && \
	trap 'rm -rf "$$cache"' EXIT && trap 'exit 130' INT TERM && \
	export TERMHOST_CACHE_DIR="$$cache" &&

test: check-plugins vet test-wasm
	$(GO) build -trimpath -o bin/termhost ./cmd/termhost
	@echo "$(GO) test -race -count=1 -timeout 15m ./...  (with a temporary TERMHOST_CACHE_DIR)"
	@$(TESTCACHE) $(GO) test -race -count=1 -timeout 15m ./...

# The Telnet core's own tests, compiled for wasip1 and run inside wazero:
# the wasm build has its own scanning code (scan_wasm.go).
test-wasm:
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	GOOS=wasip1 GOARCH=wasm $(GO) test -c -o $$tmp/proto.wasm ./plugins/telnet/proto/ && \
	$(GO) run github.com/tetratelabs/wazero/cmd/wazero run -mount $(CURDIR)/plugins/telnet/proto:/ $$tmp/proto.wasm -test.short && \
	echo "test-wasm: plugins/telnet/proto passes inside wazero"

test-short:
	@$(TESTCACHE) $(GO) test -short ./...

# Throughput benchmarks run for BENCHTIME; end-to-end ones (real processes,
# real sockets) for fixed counts, so percentiles have enough samples.
bench: build
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./plugins/telnet/proto/ ./plugins/telnet/ ./host/ringbuf/ ./host/plugin/
	@echo "same core natively, with the wasm build's portable scan (-tags portablescan):"
	$(GO) test -tags portablescan -run '^$$' -bench 'PluginNativeChunks|Receive(Plain|IAC)' -benchtime $(BENCHTIME) ./plugins/telnet/proto/ ./plugins/telnet/
	$(GO) test -run '^$$' -bench 'RoundTrip' -benchtime 1500x ./cmd/termhost/
	$(GO) test -run '^$$' -bench 'ColdStart' -benchtime 20x ./cmd/termhost/
	$(GO) test -run '^$$' -bench 'HotReload' -benchtime 20x ./cmd/termhost/
	$(GO) test -run '^$$' -bench 'IdleSessionMemory|ToolsListSize' -benchtime 3x ./cmd/termhost/
	@echo "what an idle session costs once settled (RSS growth per session over 50 more, at 10 s and 20 s): Telnet to BusyBox telnetd, bash under a PTY, ended Telnet sessions:"
	$(GO) test -run '^$$' -bench 'IdleSessionSettled' -benchtime 1x ./cmd/termhost/
	@echo "an idle server's resident memory and peak, after one Telnet session, and the first calls (median, min, max over 3 servers):"
	$(GO) test -run '^$$' -bench 'ServerMemory' -benchtime 3x ./cmd/termhost/
	$(GO) test -run '^$$' -bench '^BenchmarkToolCallLatency' -benchtime 3000x ./cmd/termhost/
	$(GO) test -run '^$$' -bench 'HTTPToolCallLatency' -benchtime 3000x ./cmd/termhost/
	@echo "N sessions under load over one stdio client, beside the raw TCP floor (CPU per round trip, cores):"
	$(GO) test -run '^$$' -bench 'ConcurrentLoad' -benchtime 1x ./cmd/termhost/
	@echo "the load that needs the server's CPU: N programs under PTYs flooding coloured text into their screens (cores termhost keeps busy):"
	$(GO) test -run '^$$' -bench 'FloodCores' -benchtime 1x ./cmd/termhost/
	$(GO) test -run '^$$' -bench 'Hostile' -benchtime 2x ./cmd/termhost/
	@echo "the VT emulator: native, in wazero (guarded, unguarded), and tmux on the same payloads:"
	$(GO) test -run '^$$' -bench 'Write$$|Render' -benchmem -benchtime $(BENCHTIME) ./plugins/vt/core/
	$(GO) test -run '^$$' -bench 'Screen' -benchtime 10x ./plugins/vt/
	@echo "the VT emulator against Ghostty's core (libghostty-vt from ../shared/testdata/ghostty-vt, never shipped) in wazero, the same 16 MiB payloads, alternating (skipped if the blob is absent):"
	$(GO) test -run '^$$' -bench 'Ghostty' -benchtime 2x -count 3 ./plugins/vt/
	$(GO) test -run '^$$' -bench 'TUILatency' -benchtime 500x ./cmd/termhost/
	@echo "pictures: an 80x24 screen as PNG and SVG (host/render), and view_screen png end to end:"
	$(GO) test -run '^$$' -bench 'PNG|SVG' -benchmem -benchtime 200x -count 3 ./host/render/
	$(GO) test -run '^$$' -bench 'ViewScreenPNG' -benchtime 200x -count 3 ./cmd/termhost/
	$(GO) test -run '^$$' -bench 'CatThroughput' -benchtime 3x -timeout 30m ./cmd/termhost/
	$(GO) test -run '^$$' -bench 'PTYSessionMemory' -benchtime 1x ./cmd/termhost/
	@echo "the dialect plugin: plain router output, natively and in wazero (guarded, unguarded):"
	$(GO) test -run '^$$' -bench 'Dialect' -benchtime $(BENCHTIME) ./plugins/dialect/
	@echo "the SSH plugin: bulk exec output and handshake, in wazero (guarded, unguarded), natively, and plain x/crypto/ssh:"
	$(GO) test -run '^$$' -bench 'Bulk|Handshake' -benchtime 3x ./plugins/ssh/
	@echo "SSH end to end against a real sshd: ssh_execute beside native x/crypto and ssh-mcp, cat into the screen, 50 connections:"
	$(GO) test -run '^$$' -bench 'BenchmarkSSHExecute' -benchtime 200x ./cmd/termhost/
	$(GO) test -run '^$$' -bench 'BenchmarkSSHShellCat|BenchmarkSSHConnections' -benchtime 1x -timeout 30m ./cmd/termhost/
	@echo "device dialects: run_command beside Netmiko (python3-netmiko) and scrapligo (internal/peerbench/scrapli) on the simulated router and a real FRR zebra:"
	$(GO) test -run '^$$' -bench 'BenchmarkRunCommand(Peers|FRR)$$' -benchtime 50x ./cmd/termhost/
	@echo "run_command over the command's own time, per kind and program class, beside a bare client's floor (issue 32):"
	$(GO) test -v -run '^$$' -bench 'RunCommandOverhead' -benchtime 300x -count 5 ./cmd/termhost/
	@echo "what the trust work costs: a launch under each containment, a line checked against rules.json, staging a chunk with secrets to mask:"
	$(GO) test -run '^$$' -bench 'LaunchContainment' -benchtime 50x -count 2 ./host/link/pty/
	$(GO) test -run '^$$' -bench 'BenchmarkCheck' -benchmem -benchtime 3000x ./host/policy/
	$(GO) test -run '^$$' -bench 'BenchmarkStage' -benchmem -benchtime $(BENCHTIME) ./host/session/

demo:
	$(GO) run ./cmd/termhost demo

clean:
	rm -rf bin

# The live view's xterm.js (host/mcp/viewassets, embedded): vendored once
# with npm by tools/fetch-xterm.sh and committed; run this to change its
# version (XTERM_VERSION=…). Building termhost needs neither npm nor a
# network.
.PHONY: xterm
xterm:
	./tools/fetch-xterm.sh
