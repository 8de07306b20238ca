package secrets

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

const testPassword = "hunter2-Secret!"

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestParseGood(t *testing.T) {
	data := fmt.Sprintf(`{"version":"1.0","credentials":[
	 {"id":"pw","name":"Dev","host":"dev.example.com","port":2222,"username":"admin","authType":"password","password":%q},
	 {"id":"k","host":"k.example.com","username":"ubuntu","authType":"key","privateKeyPath":"~/id","passphrase":%q},
	 {"id":"ag","host":"a","username":"u","authType":"agent"},
	 {"id":"def","host":"d","username":"u","authType":"key"}]}`, b64(testPassword), b64("pp"))
	home, _ := os.UserHomeDir()
	cs, err := Parse([]byte(data), Defaults{KeyPath: "/keys/default", Passphrase: "envpp"})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 4 {
		t.Fatalf("got %d credentials", len(cs))
	}
	if cs[0].Port != 2222 || string(cs[0].Password()) != testPassword || cs[0].Name != "Dev" {
		t.Errorf("password entry: %+v", cs[0].Info)
	}
	if cs[1].Port != 22 || cs[1].PrivateKeyPath != filepath.Join(home, "id") || string(cs[1].passphrase) != "pp" {
		t.Errorf("key entry: %v %q", cs[1].Info, cs[1].PrivateKeyPath)
	}
	if cs[3].PrivateKeyPath != "/keys/default" || string(cs[3].passphrase) != "envpp" {
		t.Errorf("defaults not applied: %q", cs[3].PrivateKeyPath)
	}
	for _, c := range cs {
		for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
			if s := fmt.Sprintf(f, c); strings.Contains(s, testPassword) || strings.Contains(s, "pp\"") {
				t.Errorf("%s prints a secret: %s", f, s)
			}
		}
	}
}

// A device credential (a password, no authType) may leave out the
// username: password-only lines (Cisco line vty, FRR) ask for none. It is
// listed without one, and an SSH login refuses it before dialing.
func TestPasswordOnlyDeviceCredential(t *testing.T) {
	data := `{"version":"1.0","credentials":[{"id":"vty","host":"r1","port":23,"password":"` + b64(testPassword) + `","enableSecret":"` + b64("en") + `"}]}`
	cs, err := Parse([]byte(data), Defaults{})
	if err != nil {
		t.Fatal(err)
	}
	c := cs[0]
	if c.Username != "" || c.AuthType != AuthPassword || string(c.Password()) != testPassword {
		t.Fatalf("parsed: %v", c)
	}
	b, _ := json.Marshal(c.Info)
	if strings.Contains(string(b), "username") || c.String() != `credential "vty" (r1:23, password)` {
		t.Errorf("shown as %s / %s", b, c)
	}
	if _, err := c.Keys(); !errors.Is(err, ErrNoUsername) || !strings.Contains(err.Error(), `credential "vty" has no username`) {
		t.Errorf("Keys: %v", err)
	}
	if _, err := c.Secret("username"); err == nil {
		t.Error("Secret(username) of a credential without one")
	}
}

func TestParseErrorsNameTheField(t *testing.T) {
	entry := func(s string) string { return `{"version":"1.0","credentials":[` + s + `]}` }
	for _, c := range []struct{ in, want string }{
		{`nope`, "syntax error"},
		{`{"version":"2.0","credentials":[]}`, "version"},
		{`{"credentials":[],"extra":1}`, `unknown field "extra"`},
		{entry(`{"host":"h","username":"u","authType":"agent"}`), "credentials[0].id: missing"},
		{entry(`{"id":"a","username":"u","authType":"agent"}`), `credentials[0] ("a").host: missing`},
		{entry(`{"id":"a","host":"h","port":70000,"username":"u","authType":"agent"}`), "port: 70000 is out of range"},
		{entry(`{"id":"a","host":"h","port":"22","username":"u","authType":"agent"}`), "port"},
		{entry(`{"id":"a","host":"h","authType":"agent"}`), "username: missing"},
		{entry(`{"id":"a","host":"h","authType":"password","password":"` + b64(testPassword) + `"}`), "username: missing"},
		{entry(`{"id":"a","host":"h","username":"u\r\nreload","password":"` + b64(testPassword) + `"}`), "username: expected one line"},
		{entry(`{"id":"a","host":"h"}`), "authType: missing"},
		{entry(`{"id":"a","host":"h","username":"u"}`), "authType: missing"},
		{entry(`{"id":"a","host":"h","username":"u","authType":"magic"}`), `authType: "magic" is not known`},
		{entry(`{"id":"a","host":"h","username":"u","authType":"key"}`), "privateKeyPath: missing"},
		{entry(`{"id":"a","host":"h","username":"u","authType":"password"}`), "password: missing"},
		{entry(`{"id":"a","host":"h","username":"u","authType":"password","password":"!!not base64 ` + testPassword + `"}`), "password: not valid base64"},
		{entry(`{"id":"a","host":"h","username":"u","authType":"agent"},{"id":"a","host":"h","username":"u","authType":"agent"}`), "used twice"},
	} {
		_, err := Parse([]byte(c.in), Defaults{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) = %v, want an error containing %q", c.in, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), testPassword) {
			t.Errorf("error leaks the password: %v", err)
		}
	}
}

func TestStoreReloadPermsAndLastGood(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "credentials.json")
	s, err := NewStore(path, Defaults{}, nil)
	if err != nil || s.Len() != 0 {
		t.Fatalf("missing file: %v, %d", err, s.Len())
	}
	if _, err := s.Get("x"); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "credentials.example.json") {
		t.Errorf("Get on empty store: %v", err)
	}
	one := `{"version":"1.0","credentials":[{"id":"one","host":"h","username":"u","authType":"password","password":"` + b64(testPassword) + `"}]}`
	writeFile(t, path, one, 0o644)
	err = s.Reload()
	var pe *PermError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "chmod 600 "+path) {
		t.Fatalf("world-readable file: %v", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Watch(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The watcher sees the chmod too; reload explicitly to be sure of the
	// starting point, then change the file and wait for the watcher.
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("one"); err != nil {
		t.Fatal(err)
	}
	gen := s.Gen()
	two := strings.Replace(one, `"one"`, `"two"`, 1)
	tmp := path + ".tmp"
	writeFile(t, tmp, two, 0o600)
	if err := os.Rename(tmp, path); err != nil { // how editors save
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the reload", func() bool { return s.Gen() > gen })
	if _, err := s.Get("two"); err != nil {
		t.Fatalf("after reload: %v", err)
	}
	if _, err := s.Get("one"); err == nil || !strings.Contains(err.Error(), "known: two") {
		t.Errorf("old id still there or error unclear: %v", err)
	}
	writeFile(t, path, `{"version":"1.0","credentials":[{`, 0o600)
	testutil.Eventually(t, 10*time.Second, "the load error", func() bool { return s.Err() != nil })
	if _, err := s.Get("two"); err != nil {
		t.Errorf("last good set lost after a bad file: %v", err)
	}
	if got := s.List(); len(got) != 1 || got[0].ID != "two" || got[0].AuthType != "password" {
		t.Errorf("List = %+v", got)
	}
}

func writeKey(t *testing.T, dir, name string, key any, passphrase string) string {
	t.Helper()
	var blk *pem.Block
	var err error
	if passphrase != "" {
		blk, err = ssh.MarshalPrivateKeyWithPassphrase(key, "", []byte(passphrase))
	} else {
		blk, err = ssh.MarshalPrivateKey(key, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	writeFile(t, p, string(pem.EncodeToMemory(blk)), 0o600)
	return p
}

func TestKeysSign(t *testing.T) {
	dir := t.TempDir()
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	plain := writeKey(t, dir, "ed", edKey, "")
	locked := writeKey(t, dir, "rsa", rsaKey, "open sesame")
	data := []byte("session identifier and such")
	for _, c := range []struct {
		name string
		cred Credential
		alg  string
	}{
		{"ed25519", Credential{Info: Info{ID: "a", Username: "u", AuthType: AuthKey}, PrivateKeyPath: plain}, ""},
		{"rsa with passphrase", Credential{Info: Info{ID: "b", Username: "u", AuthType: AuthKey}, PrivateKeyPath: locked, passphrase: []byte("open sesame")}, ssh.KeyAlgoRSASHA256},
	} {
		k, err := c.cred.Keys()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		pub, err := ssh.ParsePublicKey(k.Public()[0])
		if err != nil {
			t.Fatal(err)
		}
		raw, err := k.Sign(0, c.alg, data)
		if err != nil {
			t.Fatalf("%s: sign: %v", c.name, err)
		}
		var sig ssh.Signature
		if err := ssh.Unmarshal(raw, &sig); err != nil {
			t.Fatal(err)
		}
		if c.alg != "" && sig.Format != c.alg {
			t.Errorf("%s: format %s, want %s", c.name, sig.Format, c.alg)
		}
		if err := pub.Verify(data, &sig); err != nil {
			t.Errorf("%s: signature does not verify: %v", c.name, err)
		}
		k.Close()
	}
	for _, c := range []struct {
		name string
		cred Credential
		want string
	}{
		{"no passphrase", Credential{Info: Info{ID: "c", Username: "u", AuthType: AuthKey}, PrivateKeyPath: locked}, "encrypted and no passphrase"},
		{"wrong passphrase", Credential{Info: Info{ID: "c", Username: "u", AuthType: AuthKey}, PrivateKeyPath: locked, passphrase: []byte("nope")}, "passphrase does not open"},
		{"missing file", Credential{Info: Info{ID: "c", Username: "u", AuthType: AuthKey}, PrivateKeyPath: filepath.Join(dir, "none")}, "does not exist"},
		{"not a key", Credential{Info: Info{ID: "c", Username: "u", AuthType: AuthKey}, PrivateKeyPath: writeFileRet(t, dir, "junk", "hello", 0o600)}, "cannot be parsed"},
		{"open key", Credential{Info: Info{ID: "c", Username: "u", AuthType: AuthKey}, PrivateKeyPath: writeFileRet(t, dir, "open", "x", 0o644)}, "chmod 600"},
	} {
		_, err := c.cred.Keys()
		var ke *KeyError
		if !errors.As(err, &ke) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want KeyError containing %q", c.name, err, c.want)
		}
	}
}

func writeFileRet(t *testing.T, dir, name, data string, mode os.FileMode) string {
	p := filepath.Join(dir, name)
	writeFile(t, p, data, mode)
	return p
}

func TestAgentKeys(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	kr := agent.NewKeyring()
	_, k1, _ := ed25519.GenerateKey(rand.Reader)
	_, k2, _ := ed25519.GenerateKey(rand.Reader)
	for _, k := range []any{k1, k2} {
		if err := kr.Add(agent.AddedKey{PrivateKey: k}); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go agent.ServeAgent(kr, c)
		}
	}()
	t.Setenv("SSH_AUTH_SOCK", sock)
	k, err := Credential{Info: Info{ID: "ag", Username: "u", AuthType: AuthAgent}}.Keys()
	if err != nil {
		t.Fatal(err)
	}
	if k.Len() != 2 {
		t.Errorf("agent keys: %d, want 2", k.Len())
	}
	sig, err := k.Sign(1, "", []byte("x"))
	if err != nil || len(sig) == 0 {
		t.Errorf("agent sign: %v", err)
	}
	k.Close()
	// A .pub file picks one of the agent's keys.
	pub2, _ := ssh.NewPublicKey(k2.Public())
	pubPath := writeFileRet(t, dir, "k2.pub", string(ssh.MarshalAuthorizedKey(pub2)), 0o644)
	k, err = Credential{Info: Info{ID: "ag", Username: "u", AuthType: AuthAgent}, PrivateKeyPath: pubPath}.Keys()
	if err != nil || k.Len() != 1 || string(k.Public()[0]) != string(pub2.Marshal()) {
		t.Fatalf("agent key by .pub: %v", err)
	}
	k.Close()
	t.Setenv("SSH_AUTH_SOCK", "")
	if _, err := (Credential{Info: Info{ID: "ag", Username: "u", AuthType: AuthAgent}}).Keys(); err == nil || !strings.Contains(err.Error(), "SSH_AUTH_SOCK") {
		t.Errorf("no agent: %v", err)
	}
}

func TestKnownHostsTOFUAndChange(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "sub", "known_hosts")
	user := filepath.Join(dir, "user_known_hosts")
	_, k1, _ := ed25519.GenerateKey(rand.Reader)
	_, k2, _ := ed25519.GenerateKey(rand.Reader)
	_, k3, _ := ed25519.GenerateKey(rand.Reader)
	p1, _ := ssh.NewPublicKey(k1.Public())
	p2, _ := ssh.NewPublicKey(k2.Public())
	p3, _ := ssh.NewPublicKey(k3.Public())
	// The user's file already knows another host.
	writeFile(t, user, "[10.0.0.9]:2200 "+string(ssh.MarshalAuthorizedKey(p3)), 0o644)
	h := NewHostKeys(own, []string{user}, nil)
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2222}
	if err := h.Check("127.0.0.1:2222", addr, p1); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if fi, err := os.Stat(own); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("own file not written 0600: %v", err)
	}
	if err := h.Check("127.0.0.1:2222", addr, p1); err != nil {
		t.Fatalf("second use: %v", err)
	}
	err := h.Check("127.0.0.1:2222", addr, p2)
	var ce *HostKeyChangedError
	if !errors.As(err, &ce) {
		t.Fatalf("changed key: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{ssh.FingerprintSHA256(p1), ssh.FingerprintSHA256(p2), "ssh-keygen -R '[127.0.0.1]:2222' -f " + own} {
		if !strings.Contains(msg, want) {
			t.Errorf("changed-key error lacks %q: %s", want, msg)
		}
	}
	if err := h.Check("10.0.0.9:2200", &net.TCPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 2200}, p3); err != nil {
		t.Errorf("key known from the user's file: %v", err)
	}
	if err := h.Check("10.0.0.9:2200", &net.TCPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 2200}, p1); !errors.As(err, &ce) {
		t.Errorf("changed key of the user's file: %v", err)
	}
	if got := h.Algorithms("127.0.0.1:2222"); len(got) != 1 || got[0] != ssh.KeyAlgoED25519 {
		t.Errorf("Algorithms = %v", got)
	}
	if got := h.Algorithms("unknown:22"); got != nil {
		t.Errorf("Algorithms(unknown) = %v", got)
	}
}

// The shipped example parses.
func TestShippedExample(t *testing.T) {
	data, err := os.ReadFile("../../credentials.example.json")
	if err != nil {
		t.Fatal(err)
	}
	cs, err := Parse(data, Defaults{})
	if err != nil || len(cs) != 4 || len(cs[3].Hosts) != 2 || len(cs[3].Programs) != 1 {
		t.Fatalf("credentials.example.json: %d, %v", len(cs), err)
	}
}
