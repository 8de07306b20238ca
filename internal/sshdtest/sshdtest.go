// Package sshdtest runs a real OpenSSH sshd for tests: on 127.0.0.1 at a
// free port, with its own configuration, host key and authorized keys
// (never the system's sshd), a log of every command it was asked to run,
// and, when the tests run as root, a throwaway user with a random password
// for password authentication.
package sshdtest

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/termhost/termhost/internal/testutil"
)

// Need returns the path of sshd, or skips the test (fails it under CI,
// where .ci/run installs openssh-server).
func Need(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd", "/sbin/sshd"} {
		if _, err := os.Stat(p); err == nil {
			if _, err := exec.LookPath("ssh-keygen"); err == nil {
				return p
			}
		}
	}
	testutil.SkipUnlessCI(t, "sshd and ssh-keygen are needed (apt-get install openssh-server openssh-client)")
	return ""
}

// Server is a running sshd.
type Server struct {
	Host string
	Port int
	// User logs in with the keys of AuthorizeKey and, when Password is
	// set, with Password.
	User       string
	Password   string
	Dir        string
	HostKeyPub string // the host key, authorized_keys format
	// Logged says Commands works: the server's user is the test user with
	// the logging login shell (the tests run as root).
	Logged bool

	t       testing.TB
	sshd    string
	cmd     *exec.Cmd
	logPath string
	cmdLog  string
	mu      sync.Mutex
}

// Options of Start.
type Options struct {
	// HostKey is a private host key file to use (a test that changes the
	// server's key restarts with another); "" generates one.
	HostKey string
}

// testUser is the user the servers log in as when running as root.
const testUser = "termhost-test"

var (
	userOnce sync.Once
	userPass string
	userErr  error
)

// loginShell is the test user's login shell: it logs each command line
// sshd runs through it to $TERMHOST_CMDLOG (set by the server's SetEnv),
// then runs it with /bin/sh, replacing itself, so the process sshd started
// is the command's shell (signals and process groups as without it).
const loginShell = "/usr/local/lib/termhost-test/shell"

const loginShellText = `#!/bin/sh
if [ "$1" = "-c" ]; then
  [ -n "$TERMHOST_CMDLOG" ] && printf '%s\n' "$2" >> "$TERMHOST_CMDLOG"
  exec /bin/sh -c "$2"
fi
[ -n "$TERMHOST_CMDLOG" ] && printf '<shell>\n' >> "$TERMHOST_CMDLOG"
exec /bin/sh "$@"
`

// ensureUser makes the throwaway user (as root) with a fresh random
// password and the logging login shell. Test processes that run side by
// side (go test ./... runs packages in parallel, and this package's own
// test is one of them) share the user, so they share its password too:
// each holds a shared lock on userLock for as long as it lives, and only
// a process that finds no other holding it (an exclusive lock, taken
// without waiting) sets a new password, writes it to userPassFile (root's
// only) and keeps a shared lock; the others wait for that and read the
// file. Without it, a second process's new password failed the first's
// password logins in flight. So the password still changes with every
// run that starts alone, and is never known beyond the runs sharing it.
func ensureUser() (string, error) {
	userOnce.Do(func() {
		// A bare descriptor, never closed, so the lock is held until the
		// process exits (an *os.File's finalizer would close it).
		lock, err := syscall.Open(userLock, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			userErr = fmt.Errorf("opening %s: %v", userLock, err)
			return
		}
		if syscall.Flock(lock, syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			// Another test process is using the user: share its password.
			if err := syscall.Flock(lock, syscall.LOCK_SH); err != nil {
				userErr = fmt.Errorf("locking %s: %v", userLock, err)
				return
			}
			b, err := os.ReadFile(userPassFile)
			if err == nil && len(b) > 0 {
				userPass = strings.TrimSpace(string(b))
				return
			}
			userErr = fmt.Errorf("another test process holds %s but %s has no password: %v", userLock, userPassFile, err)
			return
		}
		userErr = setUpUser()
		if userErr == nil {
			userErr = os.WriteFile(userPassFile, []byte(userPass+"\n"), 0o600)
		}
		syscall.Flock(lock, syscall.LOCK_SH) // let the others in
	})
	return userPass, userErr
}

// The lock test processes share the user under, and the password file.
const (
	userLock     = "/run/termhost-test-user.lock"
	userPassFile = "/run/termhost-test-user.password"
)

// setUpUser makes the user, or updates its login shell, and gives it a new
// random password (userPass).
func setUpUser() error {
	var b [12]byte
	rand.Read(b[:])
	userPass = "Th-" + hex.EncodeToString(b[:])
	if err := os.MkdirAll(filepath.Dir(loginShell), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(loginShell, []byte(loginShellText), 0o755); err != nil {
		return err
	}
	os.Chmod(loginShell, 0o755)
	if _, err := user.Lookup(testUser); err != nil {
		if out, err := exec.Command("useradd", "-m", "-s", loginShell, testUser).CombinedOutput(); err != nil {
			return fmt.Errorf("useradd: %v: %s", err, out)
		}
	} else if out, err := exec.Command("usermod", "-s", loginShell, testUser).CombinedOutput(); err != nil {
		return fmt.Errorf("usermod: %v: %s", err, out)
	}
	chp := exec.Command("chpasswd")
	chp.Stdin = strings.NewReader(testUser + ":" + userPass + "\n")
	if out, err := chp.CombinedOutput(); err != nil {
		return fmt.Errorf("chpasswd: %v: %s", err, out)
	}
	return nil
}

// Start starts sshd for the test; it is stopped when the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	sshd := Need(t)
	dir := t.TempDir()
	// The server's user reads its authorized keys and runs the command
	// logger from here: every directory on the way must let it through.
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	s := &Server{t: t, sshd: sshd, Dir: dir, Host: "127.0.0.1"}
	if os.Geteuid() == 0 {
		pass, err := ensureUser()
		if err != nil {
			t.Fatalf("test user: %v", err)
		}
		s.User, s.Password, s.Logged = testUser, pass, true
		os.MkdirAll("/run/sshd", 0o755) // privilege separation directory
	} else {
		u, err := user.Current()
		if err != nil {
			t.Fatal(err)
		}
		s.User = u.Username
	}
	hostKey := o.HostKey
	if hostKey == "" {
		hostKey = s.KeyPair("host_ed25519", "ed25519", "")
	}
	pub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	s.HostKeyPub = strings.TrimSpace(string(pub))
	os.MkdirAll(filepath.Join(dir, "authorized"), 0o755)
	s.cmdLog = filepath.Join(dir, "commands.log")
	os.WriteFile(s.cmdLog, nil, 0o666)
	os.Chmod(s.cmdLog, 0o666)
	s.Port = freePort(t)
	cfg := filepath.Join(dir, "sshd_config")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile %s/sshd.pid
AuthorizedKeysFile %s/authorized/%%u
StrictModes no
UsePAM no
PasswordAuthentication yes
KbdInteractiveAuthentication no
PermitRootLogin yes
PermitUserEnvironment no
SetEnv TERMHOST_CMDLOG=%s
LogLevel VERBOSE
MaxStartups 100
MaxSessions 50
AcceptEnv LANG LC_*
Subsystem sftp internal-sftp
`, s.Port, hostKey, dir, dir, s.cmdLog)), 0o644)
	s.logPath = filepath.Join(dir, "sshd.log")
	s.start(cfg)
	return s
}

func (s *Server) start(cfg string) {
	t := s.t
	log, err := os.Create(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(s.sshd, "-D", "-e", "-f", cfg)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	s.cmd = cmd
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		log.Close()
		if t.Failed() {
			t.Logf("sshd log:\n%s", s.Log())
		}
	})
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen on %s: %v\n%s", addr, err, s.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// KeyPair makes a key pair in the server's directory (type ed25519, rsa…,
// with an optional passphrase) and returns the private key's path.
func (s *Server) KeyPair(name, typ, passphrase string) string {
	s.t.Helper()
	p := filepath.Join(s.Dir, name)
	args := []string{"-q", "-t", typ, "-N", passphrase, "-f", p, "-C", name}
	if typ == "rsa" {
		args = append(args, "-b", "2048")
	}
	if out, err := exec.Command("ssh-keygen", args...).CombinedOutput(); err != nil {
		s.t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	return p
}

// AuthorizeKey lets the server's user log in with the key whose private
// file is priv.
func (s *Server) AuthorizeKey(priv string) {
	s.t.Helper()
	pub, err := os.ReadFile(priv + ".pub")
	if err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(s.Dir, "authorized", s.User), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	f.Write(pub)
}

// Commands are the command lines the server was asked to run, in order
// ("<shell>" for an interactive shell).
func (s *Server) Commands() []string {
	f, err := os.Open(s.cmdLog)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// CommandLog is the raw command log.
func (s *Server) CommandLog() string {
	b, _ := os.ReadFile(s.cmdLog)
	return string(b)
}

// Log is sshd's log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

// Agent starts a real ssh-agent holding the given private keys and
// returns its socket (for SSH_AUTH_SOCK).
func Agent(t testing.TB, keys ...string) string {
	t.Helper()
	testutil.NeedProgram(t, "ssh-agent")
	dir := t.TempDir()
	sock := filepath.Join(dir, "agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("ssh-agent did not create its socket")
		}
	}
	for _, k := range keys {
		add := exec.Command("ssh-add", k)
		add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add: %v: %s", err, out)
		}
	}
	return sock
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Processes lists the command lines of the server user's processes that
// contain sub (from /proc).
func (s *Server) Processes(sub string) []string {
	u, err := user.Lookup(s.User)
	if err != nil {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		st, err := os.Stat(filepath.Join("/proc", e.Name()))
		if err != nil {
			continue
		}
		_ = st
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil || !strings.Contains(string(status), "\nUid:\t"+u.Uid+"\t") {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		line := strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
		if strings.Contains(line, sub) {
			out = append(out, e.Name()+" "+line)
		}
	}
	return out
}

// SystemUser is the throwaway test user and its password for this run (for
// logins through the system's /bin/login, e.g. a telnetd); it skips the
// test unless run as root (fails under CI).
func SystemUser(t testing.TB) (name, password string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testutil.SkipUnlessCI(t, "not root: the login tests need root to create their user")
	}
	pass, err := ensureUser()
	if err != nil {
		t.Fatalf("test user: %v", err)
	}
	return testUser, pass
}
