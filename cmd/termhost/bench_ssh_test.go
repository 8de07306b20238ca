package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/crypto/ssh"

	"github.com/termhost/termhost/internal/sshdtest"
)

// sshBench is a real sshd with a key, and credentials for termhost.
type sshBench struct {
	srv      *sshdtest.Server
	key      string
	credFile string
	dir      string
}

func newSSHBench(b *testing.B) *sshBench {
	srv := sshdtest.Start(b, sshdtest.Options{})
	key := srv.KeyPair("bench", "ed25519", "")
	srv.AuthorizeKey(key)
	dir := b.TempDir()
	creds, _ := json.Marshal(map[string]any{"version": "1.0", "credentials": []map[string]any{
		{"id": "bench", "host": srv.Host, "port": srv.Port, "username": srv.User, "authType": "key", "privateKeyPath": key},
	}})
	credFile := filepath.Join(dir, "credentials.json")
	os.WriteFile(credFile, creds, 0o600)
	os.WriteFile(filepath.Join(dir, "rules.json"), []byte(`{}`), 0o644) // an explicit rules file must exist
	return &sshBench{srv: srv, key: key, credFile: credFile, dir: dir}
}

func (sb *sshBench) host(b *testing.B, extra ...string) *hostProc {
	return startHost(b, append([]string{"--log-level", "warn", "--ssh-max-per-client", "60", "--credentials", sb.credFile, "--rules", filepath.Join(sb.dir, "rules.json"),
		"--known-hosts", filepath.Join(sb.dir, "known_hosts"), "--no-user-known-hosts"}, extra...)...)
}

func (sb *sshBench) clientConfig(b *testing.B) *ssh.ClientConfig {
	pem, err := os.ReadFile(sb.key)
	if err != nil {
		b.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		b.Fatal(err)
	}
	return &ssh.ClientConfig{User: sb.srv.User, Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.InsecureIgnoreHostKey(), Timeout: 10 * time.Second}
}

func (sb *sshBench) addr() string { return net.JoinHostPort(sb.srv.Host, strconv.Itoa(sb.srv.Port)) }

// BenchmarkSSHExecute: ssh_execute of `echo` against a loopback OpenSSH,
// ephemeral (consecutive calls on one credential: the warm connection,
// a fresh channel each), ephemeral with --ssh-warm=false (a full
// handshake per call) and persistent, p50/p99, beside native x/crypto/ssh doing the
// same and beside the ssh-mcp npm package driven over stdio by the same
// client (when node and npm are there).
func BenchmarkSSHExecute(b *testing.B) {
	sb := newSSHBench(b)
	h := sb.host(b)
	n := b.N
	measure := func(f func(i int)) []time.Duration {
		f(-1) // warm up: first connection, host key recorded, plugin compiled
		out := make([]time.Duration, n)
		for i := range n {
			t0 := time.Now()
			f(i)
			out[i] = time.Since(t0)
		}
		return out
	}
	for _, mode := range []string{"ephemeral", "persistent"} {
		lat := measure(func(i int) {
			r := h.must("ssh_execute", map[string]any{"credentialId": "bench", "command": "echo hi", "sessionMode": mode})
			if r["stdout"] != "hi\n" {
				b.Fatalf("%s: %v", mode, r)
			}
		})
		percentiles(b, lat, "ms-"+mode)
	}
	cold := sb.host(b, "--ssh-warm=false")
	lat := measure(func(i int) {
		r := cold.must("ssh_execute", map[string]any{"credentialId": "bench", "command": "echo hi"})
		if r["stdout"] != "hi\n" {
			b.Fatalf("unpooled: %v", r)
		}
	})
	percentiles(b, lat, "ms-ephemeral-unpooled")
	cold.stop()
	cfg := sb.clientConfig(b)
	lat = measure(func(int) {
		c, err := ssh.Dial("tcp", sb.addr(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		s, _ := c.NewSession()
		if out, err := s.Output("echo hi"); err != nil || string(out) != "hi\n" {
			b.Fatalf("native: %q %v", out, err)
		}
		c.Close()
	})
	percentiles(b, lat, "ms-native-ephemeral")
	c, err := ssh.Dial("tcp", sb.addr(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	lat = measure(func(int) {
		s, _ := c.NewSession()
		if out, err := s.Output("echo hi"); err != nil || string(out) != "hi\n" {
			b.Fatalf("native: %q %v", out, err)
		}
	})
	percentiles(b, lat, "ms-native-persistent")
	if peer := sshMCP(b, sb); peer != nil {
		lat := measure(func(int) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := peer.CallTool(ctx, &sdk.CallToolParams{Name: "run-command", Arguments: map[string]any{"command": "echo hi"}})
			if err != nil || r.IsError {
				b.Fatalf("ssh-mcp: %v %v", err, r)
			}
		})
		percentiles(b, lat, "ms-ssh-mcp")
	}
}

var sshMCPOnce sync.Once
var sshMCPDir string

// sshMCP starts the ssh-mcp npm package (installed once into the user
// cache) for the bench server, or returns nil when node or npm is missing.
func sshMCP(b *testing.B, sb *sshBench) *sdk.ClientSession {
	if _, err := exec.LookPath("npm"); err != nil {
		b.Log("npm missing: ssh-mcp not measured")
		return nil
	}
	sshMCPOnce.Do(func() {
		base, err := os.UserCacheDir()
		if err != nil {
			return
		}
		dir := filepath.Join(base, "termhost", "peers", "ssh-mcp-2.11.0")
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "ssh-mcp", "build", "index.js")); err != nil {
			os.MkdirAll(dir, 0o755)
			cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--prefix", dir, "ssh-mcp@2.11.0")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Logf("npm install ssh-mcp: %v: %s", err, out)
				return
			}
		}
		sshMCPDir = dir
	})
	if sshMCPDir == "" {
		return nil
	}
	home := b.TempDir()
	cmd := exec.Command("node", filepath.Join(sshMCPDir, "node_modules", "ssh-mcp", "build", "index.js"),
		"--host="+sb.srv.Host, "--port="+strconv.Itoa(sb.srv.Port), "--user="+sb.srv.User, "--key="+sb.key,
		"--group=dev", "--disableApproval")
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Logf("ssh-mcp did not start: %v\n%s", err, stderr.String())
		return nil
	}
	b.Cleanup(func() { cs.Close() })
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "run-command", Arguments: map[string]any{"command": "echo hi"}})
	if err != nil || r.IsError {
		text := ""
		if r != nil {
			for _, c := range r.Content {
				if tc, ok := c.(*sdk.TextContent); ok {
					text += tc.Text
				}
			}
		}
		b.Logf("ssh-mcp run-command failed: %v %s\n%s", err, text, stderr.String())
		return nil
	}
	return cs
}

// BenchmarkSSHShellCat: `cat` of a 100 MB file in an SSH shell into the
// screen, through the ssh plugin, beside native x/crypto/ssh feeding the
// same bytes into the same screen (a Telnet-less PTY session running a
// local ssh client would measure OpenSSH, not x/crypto).
func BenchmarkSSHShellCat(b *testing.B) {
	const size = 100 << 20
	sb := newSSHBench(b)
	file := filepath.Join(sb.dir, "big.txt")
	writeTextFile(b, file, size)
	os.Chmod(file, 0o644)
	h := sb.host(b)
	var ours []float64
	for range b.N {
		id := h.must("ssh_shell", map[string]any{"credentialId": "bench"})["session_id"].(string)
		h.must("send_keys", map[string]any{"session_id": id, "text": "stty -echo; PS1='$ '\n"})
		h.must("wait_for", map[string]any{"session_id": id, "until": `\$ $`, "timeoutMs": 10000})
		t0 := time.Now()
		r := h.must("send_keys", map[string]any{"session_id": id, "text": "cat " + file + "; echo cat-done-$((1+1))\n",
			"until": "cat-done-2", "timeoutMs": 300000})
		if r["reason"] != "matched" {
			b.Fatalf("cat: %v", r)
		}
		ours = append(ours, float64(size)/1e6/time.Since(t0).Seconds())
		h.must("stop_app", map[string]any{"session_id": id})
	}
	b.ReportMetric(median64(ours), "MB/s-plugin")
	// Native: x/crypto/ssh reads the same cat from a PTY channel; the
	// bytes go nowhere (what the plugin's path adds beyond it is the
	// plugin, the ring and the screen).
	cfg := sb.clientConfig(b)
	var native []float64
	for range b.N {
		c, err := ssh.Dial("tcp", sb.addr(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		s, _ := c.NewSession()
		s.RequestPty("xterm-256color", 24, 80, ssh.TerminalModes{ssh.ECHO: 0})
		out, _ := s.StdoutPipe()
		t0 := time.Now()
		s.Start("cat " + file)
		var got int64
		buf := make([]byte, 256<<10)
		for {
			n, err := out.Read(buf)
			got += int64(n)
			if err != nil {
				break
			}
		}
		s.Wait()
		native = append(native, float64(got)/1e6/time.Since(t0).Seconds())
		c.Close()
	}
	b.ReportMetric(median64(native), "MB/s-native-xcrypto")
	b.ReportMetric(median64(native)/median64(ours), "x-slower")
}

// BenchmarkSSHConnections: memory and connect time per SSH connection, at
// 50 connections (persistent ssh_execute sessions of separate clients).
func BenchmarkSSHConnections(b *testing.B) {
	const n = 50
	sb := newSSHBench(b)
	for range b.N {
		h := sb.host(b)
		h.must("ssh_execute", map[string]any{"credentialId": "bench", "command": "true"}) // compile, host key
		time.Sleep(500 * time.Millisecond)
		before := h.rssMB()
		var connect []time.Duration
		var ids []string
		for i := 0; i < n; i++ {
			t0 := time.Now()
			r := h.must("ssh_shell", map[string]any{"credentialId": "bench"})
			connect = append(connect, time.Since(t0))
			ids = append(ids, r["session_id"].(string))
		}
		time.Sleep(2 * time.Second)
		after := h.rssMB()
		percentiles(b, connect, "ms-connect")
		b.ReportMetric(float64(after-before)/n, "MB/connection")
		b.Logf("RSS %d MB before, %d MB with %d SSH shells", before, after, n)
		for _, id := range ids {
			h.must("stop_app", map[string]any{"session_id": id})
		}
		h.stop()
	}
}

func writeTextFile(b *testing.B, path string, size int) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog 0123456789 ", 2)[:79] + "\n")
	chunk := bytes.Repeat(line, 4096)
	for written := 0; written < size; written += len(chunk) {
		f.Write(chunk)
	}
}
