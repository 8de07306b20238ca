// Package sshtest is an SSH server for tests, built on
// golang.org/x/crypto/ssh, listening on 127.0.0.1 only: password and
// public-key authentication, "exec" run by /bin/sh -c with stdout and stderr
// kept apart and the exit status (or signal) reported, "signal" requests
// delivered to the command's process group, and "pty-req" + "shell"
// running a real shell (or a given program) under a PTY, resized by
// "window-change". Every command received is logged, so a test can assert
// that one never arrived.
package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/crypto/ssh"
)

// Options configure a Server. The zero value accepts nobody.
type Options struct {
	// Passwords maps a user to the password accepted for it.
	Passwords map[string]string
	// AuthorizedKeys maps a user to the public keys accepted for it.
	AuthorizedKeys map[string][]ssh.PublicKey
	// HostKey is the server's key; default a fresh ed25519 key.
	HostKey ssh.Signer
	// Shell is the program a "shell" request runs under a PTY; default
	// /bin/sh. Its arguments follow.
	Shell []string
	// Ciphers, when set, limits the ciphers the server offers.
	Ciphers []string
	// Env is added to the environment of every command.
	Env []string

	// beforeReply, when set, runs before the server answers a channel
	// request: this package's tests widen the gap between a request and
	// its answer with it.
	beforeReply func()
}

// Server is a running test server.
type Server struct {
	// Addr is host:port, on 127.0.0.1.
	Addr string
	// Port is its port.
	Port int

	opts Options
	cfg  *ssh.ServerConfig
	ln   net.Listener
	wg   sync.WaitGroup

	mu        sync.Mutex
	commands  []string
	conns     map[*ssh.ServerConn]struct{}
	closed    bool
	execReply ExecReply // how an exec is answered (SetExecReply)
}

// ExecReply is how the server answers an exec request.
type ExecReply int

const (
	// Answered: the request is answered before the command starts, as
	// sshd does.
	Answered ExecReply = iota
	// ChannelClosed: the command runs, then its channel closes with the
	// request unanswered.
	ChannelClosed
	// ConnectionClosed: the command runs, then the whole connection
	// closes with the request unanswered.
	ConnectionClosed
)

// Start starts a server; it is closed when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// New starts a server (for benchmarks and tools: Close it).
func New(opts Options) (*Server, error) {
	if opts.HostKey == nil {
		k, err := NewEd25519Signer()
		if err != nil {
			return nil, err
		}
		opts.HostKey = k
	}
	if len(opts.Shell) == 0 {
		opts.Shell = []string{"/bin/sh"}
	}
	s := &Server{opts: opts, conns: make(map[*ssh.ServerConn]struct{})}
	s.cfg = &ssh.ServerConfig{
		PasswordCallback: func(c ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
			want, ok := opts.Passwords[c.User()]
			if ok && want == string(pw) {
				return nil, nil
			}
			return nil, errors.New("wrong password")
		},
		PublicKeyCallback: func(c ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			for _, k := range opts.AuthorizedKeys[c.User()] {
				if string(k.Marshal()) == string(key.Marshal()) {
					return nil, nil
				}
			}
			return nil, errors.New("key not authorized")
		},
	}
	if len(opts.Ciphers) > 0 {
		s.cfg.Ciphers = opts.Ciphers
	}
	s.cfg.AddHostKey(opts.HostKey)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.ln = ln
	s.Addr = ln.Addr().String()
	s.Port = ln.Addr().(*net.TCPAddr).Port
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// NewEd25519Signer makes a fresh ed25519 key.
func NewEd25519Signer() (ssh.Signer, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	return ssh.NewSignerFromKey(priv)
}

// HostKey is the server's public host key.
func (s *Server) HostKey() ssh.PublicKey { return s.opts.HostKey.PublicKey() }

// Commands returns every exec command received so far, in order.
func (s *Server) Commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.commands)
}

// SetExecReply sets how every exec from now on is answered: with
// ChannelClosed or ConnectionClosed the command runs and the client's
// exec fails with no way to tell whether it ran, as when an answer is
// lost. The command is logged (Commands) either way.
func (s *Server) SetExecReply(r ExecReply) {
	s.mu.Lock()
	s.execReply = r
	s.mu.Unlock()
}

// DropConnections closes every connection open now (its handshake done
// on the server's side), as a server that ends idle connections does; it
// keeps listening.
func (s *Server) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// Close stops the server and drops every connection.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	s.wg.Wait()
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(nc)
		}()
	}
}

func (s *Server) serve(nc net.Conn) {
	// The handshake bound is generous: the client is the ssh plugin in
	// wazero, guarded, under the race detector, beside other packages'
	// tests on two CPUs (CI saw a handshake cut at 30 s: "exec: EOF").
	nc.SetDeadline(time.Now().Add(2 * time.Minute))
	sc, chans, reqs, err := ssh.NewServerConn(nc, s.cfg)
	if err != nil {
		nc.Close()
		return
	}
	nc.SetDeadline(time.Time{})
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sc.Close()
		return
	}
	s.conns[sc] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, sc)
		s.mu.Unlock()
		sc.Close()
	}()
	go ssh.DiscardRequests(reqs)
	var wg sync.WaitGroup
	for nch := range chans {
		if nch.ChannelType() != "session" {
			nch.Reject(ssh.UnknownChannelType, "only session channels")
			continue
		}
		ch, creqs, err := nch.Accept()
		if err != nil {
			continue
		}
		wg.Go(func() { s.session(sc, ch, creqs) })
	}
	wg.Wait()
}

// session serves one session channel.
type session struct {
	s    *Server
	ch   ssh.Channel
	env  []string
	term string
	cols uint32
	rows uint32
	pty  bool

	mu     sync.Mutex
	cmd    *exec.Cmd
	ptmx   *os.File
	exited bool
}

func (s *Server) session(sc *ssh.ServerConn, ch ssh.Channel, reqs <-chan *ssh.Request) {
	ss := &session{s: s, ch: ch, term: "xterm", cols: 80, rows: 24}
	defer ch.Close()
	started := false
	for req := range reqs {
		ok := false
		var cmd *exec.Cmd // the command an exec or shell starts, once answered
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			if ssh.Unmarshal(req.Payload, &kv) == nil {
				ss.env = append(ss.env, kv.Name+"="+kv.Value)
				ok = true
			}
		case "pty-req":
			var p struct {
				Term                 string
				Cols, Rows, PxW, PxH uint32
				Modes                string
			}
			if ssh.Unmarshal(req.Payload, &p) == nil {
				ss.pty, ss.term, ss.cols, ss.rows = true, p.Term, p.Cols, p.Rows
				ok = true
			}
		case "window-change":
			var p struct{ Cols, Rows, PxW, PxH uint32 }
			if ssh.Unmarshal(req.Payload, &p) == nil {
				ss.resize(p.Cols, p.Rows)
				ok = true
			}
		case "signal":
			var p struct{ Name string }
			if ssh.Unmarshal(req.Payload, &p) == nil {
				ok = ss.signal(p.Name)
			}
		case "exec":
			var p struct{ Command string }
			if !started && ssh.Unmarshal(req.Payload, &p) == nil {
				s.mu.Lock()
				s.commands = append(s.commands, p.Command)
				reply := s.execReply
				s.mu.Unlock()
				started, ok = true, true
				cmd = exec.Command("/bin/sh", "-c", p.Command)
				switch {
				case !req.WantReply:
				case reply == ChannelClosed:
					ss.run(cmd) // it closes the channel when the command ends
					continue
				case reply == ConnectionClosed:
					cmd.Run()
					sc.Close()
					continue
				}
			}
		case "shell":
			if !started {
				started, ok = true, true
				cmd = exec.Command(s.opts.Shell[0], s.opts.Shell[1:]...)
			}
		}
		if req.WantReply {
			if s.opts.beforeReply != nil {
				s.opts.beforeReply()
			}
			req.Reply(ok, nil)
		}
		// The command starts once its request is answered, as sshd does: a
		// command that ends at once closes the channel, and a reply sent
		// after the close is dropped (x/crypto/ssh), so the client's exec
		// would fail with EOF.
		if cmd != nil {
			go ss.run(cmd)
		}
	}
	ss.kill()
}

var signals = map[string]syscall.Signal{
	"ABRT": syscall.SIGABRT, "ALRM": syscall.SIGALRM, "FPE": syscall.SIGFPE, "HUP": syscall.SIGHUP,
	"ILL": syscall.SIGILL, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL, "PIPE": syscall.SIGPIPE,
	"QUIT": syscall.SIGQUIT, "SEGV": syscall.SIGSEGV, "TERM": syscall.SIGTERM, "USR1": syscall.SIGUSR1,
	"USR2": syscall.SIGUSR2,
}

func signalName(sig syscall.Signal) string {
	for n, s := range signals {
		if s == sig {
			return n
		}
	}
	return fmt.Sprintf("SIG%d", int(sig))
}

func (ss *session) signal(name string) bool {
	sig, ok := signals[name]
	if !ok {
		return false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.cmd == nil || ss.cmd.Process == nil || ss.exited {
		return false
	}
	return syscall.Kill(-ss.cmd.Process.Pid, sig) == nil
}

func (ss *session) resize(cols, rows uint32) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.cols, ss.rows = cols, rows
	if ss.ptmx != nil {
		pty.Setsize(ss.ptmx, &pty.Winsize{Cols: uint16(cols), Rows: uint16(rows)})
	}
}

func (ss *session) kill() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.cmd != nil && ss.cmd.Process != nil && !ss.exited {
		syscall.Kill(-ss.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// run runs cmd for the channel and reports how it ended.
func (ss *session) run(cmd *exec.Cmd) {
	cmd.Env = append(append(append(os.Environ(), ss.s.opts.Env...), ss.env...), "TERM="+ss.term)
	var copies sync.WaitGroup
	ss.mu.Lock()
	if ss.pty {
		ptmx, err := pty.StartWithAttrs(cmd, &pty.Winsize{Cols: uint16(ss.cols), Rows: uint16(ss.rows)},
			&syscall.SysProcAttr{Setsid: true, Setctty: true})
		if err != nil {
			ss.mu.Unlock()
			fmt.Fprintf(ss.ch.Stderr(), "sshtest: %v\n", err)
			ss.exit(127, "")
			return
		}
		ss.cmd, ss.ptmx = cmd, ptmx
		ss.mu.Unlock()
		go func() { io.Copy(ptmx, ss.ch) }()
		copies.Go(func() { io.Copy(ss.ch, ptmx) }) // ends with EIO when the program exits
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			ss.mu.Unlock()
			fmt.Fprintf(ss.ch.Stderr(), "sshtest: %v\n", err)
			ss.exit(127, "")
			return
		}
		ss.cmd = cmd
		ss.mu.Unlock()
		go func() {
			io.Copy(stdin, ss.ch)
			stdin.Close()
		}()
		copies.Go(func() { io.Copy(ss.ch, stdout) })
		copies.Go(func() { io.Copy(ss.ch.Stderr(), stderr) })
	}
	if !ss.pty {
		copies.Wait() // the pipes end when the program (and its children) close them
	}
	err := cmd.Wait()
	ss.mu.Lock()
	ss.exited = true
	ss.mu.Unlock()
	if ss.pty {
		copies.Wait()
		ss.mu.Lock()
		ss.ptmx.Close()
		ss.ptmx = nil
		ss.mu.Unlock()
	}
	code, sig := 0, ""
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = signalName(ws.Signal())
		} else {
			code = ee.ExitCode()
		}
	} else if err != nil {
		code = 127
	}
	ss.exit(code, sig)
}

func (ss *session) exit(code int, sig string) {
	if sig != "" {
		ss.ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
			Name       string
			CoreDumped bool
			Msg, Lang  string
		}{Name: sig}))
	} else {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(code))
		ss.ch.SendRequest("exit-status", false, b[:])
	}
	ss.ch.CloseWrite()
	ss.ch.Close()
}

// syncBuf is a bytes.Buffer safe for concurrent use.
type syncBuf struct {
	mu sync.Mutex
	b  []byte
}

func (b *syncBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b = append(b.b, p...)
	return len(p), nil
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.b)
}
