package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/sshdtest"
	"github.com/termhost/termhost/internal/testutil"
	"github.com/termhost/termhost/internal/wasmhost"
)

// Issue 16, item 6: plugins and the secrets the host hands out.

// sshTrustFixture is a real sshd with a password login, a credential for
// it, and a plugin directory; start runs termhost on them.
type sshTrustFixture struct {
	srv                  *sshdtest.Server
	creds, rules, known  string
	pluginDir            string
	exfil, exfilSHA, pin string
}

func newSSHTrustFixture(t *testing.T) *sshTrustFixture {
	t.Helper()
	srv := sshdtest.Start(t, sshdtest.Options{})
	if srv.Password == "" {
		t.Skip("not root: sshd has no password login to steal")
	}
	dir := t.TempDir()
	f := &sshTrustFixture{srv: srv, pluginDir: t.TempDir(),
		creds: filepath.Join(dir, "credentials.json"), rules: filepath.Join(dir, "rules.json"), known: filepath.Join(dir, "known_hosts")}
	b, _ := json.Marshal(map[string]any{"version": "1.0", "credentials": []map[string]any{{
		"id": "pw", "host": srv.Host, "port": srv.Port, "username": srv.User, "authType": "password",
		"password": base64.StdEncoding.EncodeToString([]byte(srv.Password)),
	}}})
	if err := os.WriteFile(f.creds, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.rules, []byte(`{"deny":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	wasm := testPlugin(t, "exfilssh", "")
	sum := sha256.Sum256(wasm)
	f.exfil, f.exfilSHA = string(wasm), hex.EncodeToString(sum[:])
	f.pin = "ssh=" + f.exfilSHA
	return f
}

func (f *sshTrustFixture) start(t *testing.T, extra ...string) *hostProc {
	t.Helper()
	return startHost(t, append([]string{"--credentials", f.creds, "--rules", f.rules, "--known-hosts", f.known,
		"--no-user-known-hosts", "--plugin-dir", f.pluginDir}, extra...)...)
}

// execute runs a command with the password credential.
func (f *sshTrustFixture) execute(h *hostProc) callResult {
	return h.call(60*time.Second, "ssh_execute", map[string]any{"credentialId": "pw", "command": "echo served-by-$((6*7))"})
}

// settled waits until file was rejected (the log line is returned) or
// published (plugins_list shows a current version from it: "").
func settled(t *testing.T, h *hostProc, name, file string) string {
	t.Helper()
	var line string
	if !testutil.Poll(30*time.Second, func() bool {
		for l := range strings.SplitSeq(h.logs.String(), "\n") {
			if strings.Contains(l, "plugin file rejected") && strings.Contains(l, file) {
				line = l
				return true
			}
		}
		cur := h.currentPlugin(name)
		return cur != nil && cur["source"] == "dir:"+file
	}) {
		t.Fatalf("%s was neither rejected nor loaded within 30 s; log:\n%s", file, h.logs.String())
	}
	return line
}

// The attack: a drop-in named ssh whose code asks the host for the
// password and sends it back in its error. Dropped into the plugin
// directory of a running server, it is refused (logged with its sha256
// and the flag that would allow it), the first-party ssh plugin keeps
// serving, and no tool result or log line carries the password.
func TestTrustDropInSSHRefused(t *testing.T) {
	f := newSSHTrustFixture(t)
	h := f.start(t)
	if r := f.execute(h); r.isErr || r.res["stdout"] != "served-by-42\n" {
		t.Fatalf("ssh_execute before the drop-in: %v", r)
	}
	file := filepath.Join(f.pluginDir, "ssh.wasm")
	place(t, f.pluginDir, "ssh.wasm", []byte(f.exfil))
	line := settled(t, h, "ssh", file)
	r := f.execute(h)
	if strings.Contains(r.msg, "EXFIL") || strings.Contains(fmtJSON(r.res), "EXFIL") {
		t.Fatalf("the drop-in ssh plugin served ssh_execute: %v", r)
	}
	if line == "" || !strings.Contains(line, f.exfilSHA) || !strings.Contains(line, "--plugin-pin "+f.pin) {
		t.Errorf("the rejection does not name the file's sha256 and the flag that allows it (--plugin-pin %s): %q", f.pin, line)
	}
	if r.isErr || r.res["stdout"] != "served-by-42\n" {
		t.Fatalf("ssh_execute after the drop-in was refused: %v; want the first-party ssh plugin serving", r)
	}
	if cur := h.currentPlugin("ssh"); cur == nil || cur["source"] != "embedded" {
		t.Errorf("the current ssh plugin is %v; want the embedded one", cur)
	}

	// In the directory at start-up: the same.
	h.stop()
	h = f.start(t)
	settled(t, h, "ssh", file)
	if r := f.execute(h); r.isErr || r.res["stdout"] != "served-by-42\n" {
		t.Fatalf("ssh_execute with the drop-in in the directory at start-up: %v", r)
	}
}

// The same drop-in pinned by its sha256 loads and is trusted: the user
// chose it (its host calls are answered). The pin comes from the
// environment as well as from the flag.
func TestTrustDropInSSHPinned(t *testing.T) {
	f := newSSHTrustFixture(t)
	place(t, f.pluginDir, "ssh.wasm", []byte(f.exfil))
	h := startHostEnv(t, []string{"TERMHOST_PLUGIN_PINS=vt=" + strings.Repeat("0", 64) + "," + f.pin},
		"--credentials", f.creds, "--rules", f.rules, "--known-hosts", f.known, "--no-user-known-hosts", "--plugin-dir", f.pluginDir)
	h.allowSecret(f.srv.Password) // the pinned plugin was given it: that is the point
	if cur := h.currentPlugin("ssh"); cur == nil || cur["version"] != "6.6.6-exfil" {
		t.Fatalf("the pinned ssh drop-in is not current: %v", cur)
	}
	if r := f.execute(h); !strings.Contains(r.msg, "EXFIL password="+f.srv.Password) {
		t.Fatalf("the pinned drop-in's password host call was not answered: %v", r)
	}
}

// A pin with another sha256 refuses the drop-in, and says the pin does
// not match.
func TestTrustDropInSSHWrongPin(t *testing.T) {
	f := newSSHTrustFixture(t)
	place(t, f.pluginDir, "ssh.wasm", []byte(f.exfil))
	h := f.start(t, "--plugin-pin", "ssh="+strings.Repeat("ab", 32))
	line := settled(t, h, "ssh", filepath.Join(f.pluginDir, "ssh.wasm"))
	if !strings.Contains(line, "matches none") || !strings.Contains(line, f.exfilSHA) {
		t.Errorf("the rejection does not say the pin does not match: %s", line)
	}
	if r := f.execute(h); r.isErr || r.res["stdout"] != "served-by-42\n" {
		t.Fatalf("ssh_execute with a wrongly pinned drop-in: %v", r)
	}
}

// A plugin file group or others may write is refused (as credentials.json
// at 0644 is), with the chmod that fixes it; so is everything in a plugin
// directory they may write: at start termhost does not start, later no
// file is loaded from it.
func TestTrustWritablePluginFiles(t *testing.T) {
	upper, err := os.ReadFile("../../sdk/examples/upper/upper.wasm")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	h := startHost(t, "--plugin-dir", dir)
	file := filepath.Join(dir, "upper.wasm")
	tmp := filepath.Join(dir, ".upper.tmp")
	if err := os.WriteFile(tmp, upper, 0o664); err != nil {
		t.Fatal(err)
	}
	os.Chmod(tmp, 0o664) // past the umask
	if err := os.Rename(tmp, file); err != nil {
		t.Fatal(err)
	}
	line := settled(t, h, "upper", file)
	if !strings.Contains(line, "writable by group or others") || !strings.Contains(line, "chmod go-w "+file) {
		t.Errorf("a group-writable plugin file: %s; want it refused with the chmod that fixes it", line)
	}
	if cur := h.currentPlugin("upper"); cur != nil {
		t.Errorf("a group-writable upper.wasm was loaded: %v", cur)
	}

	// The directory becomes writable by others: a good file written into
	// it now is not loaded.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	place(t, dir, "upper2.wasm", upper)
	line = settled(t, h, "upper", filepath.Join(dir, "upper2.wasm"))
	if !strings.Contains(line, "plugin directory") || !strings.Contains(line, "chmod go-w "+dir) {
		t.Errorf("a file in a world-writable plugin directory: %s; want it refused naming the directory and chmod go-w", line)
	}
	if cur := h.currentPlugin("upper"); cur != nil {
		t.Errorf("upper was loaded from a world-writable directory: %v", cur)
	}
	h.stop()

	// At start: termhost refuses to start on such a directory.
	cmd := exec.Command(binary, "serve", "--cache-dir", cacheDir(), "--plugin-dir", dir)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "chmod go-w "+dir) {
		t.Errorf("termhost serve on a world-writable plugin directory: %v\n%s\nwant it to refuse to start, saying chmod go-w %s", err, out, dir)
	}
}

// A drop-in with a new name loads unpinned, but is not trusted:
// plugins list says so (and the session side refuses secrets into a chain
// that holds it: host/session.ChainTrusted).
func TestTrustNewNameUnpinned(t *testing.T) {
	upper, err := os.ReadFile("../../sdk/examples/upper/upper.wasm")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	place(t, dir, "upper.wasm", upper)
	sum := sha256.Sum256(upper)
	list := func(args ...string) map[string]string {
		t.Helper()
		out, err := exec.Command(binary, append([]string{"plugins", "list", "--cache-dir", cacheDir(), "--plugin-dir", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("plugins list: %v\n%s", err, out)
		}
		trusted := map[string]string{}
		for l := range strings.SplitSeq(string(out), "\n") {
			if f := strings.Fields(l); len(f) == 8 {
				trusted[f[0]] = f[6]
			}
		}
		return trusted
	}
	got := list()
	if got["upper"] != "false" || got["ssh"] != "true" || got["telnet"] != "true" {
		t.Errorf("plugins list TRUSTED: %v; want upper false (unpinned drop-in), first-party true", got)
	}
	if got := list("--plugin-pin", "upper="+hex.EncodeToString(sum[:])); got["upper"] != "true" {
		t.Errorf("plugins list TRUSTED with upper pinned: %v", got)
	}
	out, err := exec.Command(binary, "plugins", "pin", filepath.Join(dir, "upper.wasm")).CombinedOutput()
	if want := "--plugin-pin upper=" + hex.EncodeToString(sum[:]); err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("plugins pin: %v %q; want %q", err, out, want)
	}
}

// pinArgs are the --plugin-pin flags that allow these plugin files (what
// "termhost plugins pin FILE" prints).
func pinArgs(t testing.TB, files ...[]byte) []string {
	t.Helper()
	var args []string
	for _, f := range files {
		man, err := wasmhost.ReadManifest(f)
		if err != nil {
			t.Fatalf("pin: %v", err)
		}
		sum := sha256.Sum256(f)
		args = append(args, "--plugin-pin", man.Name+"="+hex.EncodeToString(sum[:]))
	}
	return args
}
