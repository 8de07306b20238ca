// Command ssh is termhost's SSH protocol plugin: the client side of SSH
// (golang.org/x/crypto/ssh, compiled for wasip1), one instance per
// connection. The host owns the TCP socket, the private keys and
// known_hosts: bytes read from the socket arrive as inbound chunks, the
// plugin's encrypted bytes leave on to_peer, host keys are checked and
// signatures made by host calls, so no private key is ever in the plugin's
// memory. The contract (control ops, events, host calls) is in CONTRACT.md.
//
// x/crypto/ssh runs on goroutines; in a wasip1 reactor they run only while
// an export does, so every export ends by letting them all run until they
// wait (settle).
package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/crypto/ssh"

	"github.com/termhost/termhost/sdk"
	"github.com/termhost/termhost/sdk/abi"
)

func init() { sdk.Register(newSession) }

func main() {}

const (
	// defaultTimeoutMs bounds the handshake and authentication (SPEC SSH-8).
	defaultTimeoutMs = 10_000
	// maxInput bounds the input queued for one channel while the server's
	// window is closed; more is refused.
	maxInput = 1 << 20
	// nativeTickMs: natively goroutines emit between calls, and a tick
	// delivers what they queued.
	nativeTickMs = 5
)

// Session states.
const (
	idle = iota
	connecting
	connected
	ended
)

type emission struct {
	stream abi.Stream
	data   []byte
}

type session struct {
	mu       sync.Mutex // guards what follows (natively goroutines run on threads)
	out      *sdk.Out   // stable for the session; set by the first call
	outbox   []emission // natively: emissions made outside calls
	conn     *pipeConn
	state    int
	ready    chan struct{} // closed when the handshake ended, either way
	gone     chan struct{} // closed when the session ended
	client   *ssh.Client
	chans    map[int]*channel
	shell    *channel
	deadline int64 // Unix ms the handshake must end by; 0: none
	timedOut bool
	kexDone  bool     // the host accepted the host key: what fails next is auth
	refusal  string   // the host's reason for refusing the host key
	secrets  [][]byte // password answers, zeroed when the handshake ends
	quitting bool     // disconnect asked for
	cols     int      // the latest generic resize, for a shell opened later
	rows     int
}

func newSession(o sdk.Open) (sdk.Session, error) {
	if o.Kind != abi.KindSSH {
		return nil, fmt.Errorf("ssh: a %s session cannot run SSH", o.Kind)
	}
	s := &session{chans: make(map[int]*channel), gone: make(chan struct{})}
	s.conn = newPipeConn(func(p []byte) { s.emit(abi.ToPeer, p) })
	return s, nil
}

// enter starts an export: the session's Out is kept for goroutines.
func (s *session) enter(out *sdk.Out) {
	s.mu.Lock()
	if s.out == nil {
		s.out = out
	}
	s.mu.Unlock()
}

// leave ends an export: the goroutines run until they wait, and what they
// emitted natively is delivered.
func (s *session) leave() {
	settle(s.conn)
	s.flush()
}

// emit sends bytes on a stream, at once in wasm, else through the outbox
// delivered by the running (or the next) call.
func (s *session) emit(stream abi.Stream, p []byte) {
	if directEmit {
		s.emitNow(stream, p)
		return
	}
	s.mu.Lock()
	s.outbox = append(s.outbox, emission{stream, append([]byte(nil), p...)})
	s.mu.Unlock()
}

func (s *session) emitNow(stream abi.Stream, p []byte) {
	switch stream {
	case abi.ToUser:
		s.out.ToUser(p)
	case abi.ToPeer:
		s.out.ToPeer(p)
	case abi.Event:
		s.out.EventJSON(p)
	case abi.Channel:
		if d, err := abi.DecodeChannel(p); err == nil {
			s.out.Channel(d.Ch, d.Fd, d.Data)
		}
	case abi.Log:
		s.out.Logf("%s", p)
	}
}

func (s *session) flush() {
	if directEmit {
		return
	}
	s.mu.Lock()
	box := s.outbox
	s.outbox = nil
	s.mu.Unlock()
	for _, e := range box {
		s.emitNow(e.stream, e.data)
	}
}

func (s *session) event(e abi.Payload) {
	s.emit(abi.Event, e.AppendEvent(nil))
}

// channelData sends output of exec channel ch on the channel stream.
func (s *session) channelData(ch uint32, fd uint8, p []byte) {
	if directEmit {
		s.out.Channel(ch, fd, p)
		return
	}
	s.emit(abi.Channel, abi.AppendChannel(nil, ch, fd, p))
}

func (s *session) logf(format string, args ...any) {
	s.emit(abi.Log, fmt.Appendf(nil, format, args...))
}

func (s *session) hostCall(req []byte) ([]byte, error) {
	s.mu.Lock()
	out := s.out
	s.mu.Unlock()
	return out.HostCall(req)
}

func (s *session) isEnded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == ended
}

// end ends the session once: an error event (if stage is set), then a
// closed event. Nothing of the peer's is read afterwards.
func (s *session) end(stage, msg string) {
	s.mu.Lock()
	if s.state == ended {
		s.mu.Unlock()
		return
	}
	s.state = ended
	s.deadline = 0
	client, conn := s.client, s.conn
	close(s.gone)
	s.mu.Unlock()
	if stage != "" {
		s.event(abi.Error{Message: msg, Stage: stage})
	}
	s.event(abi.Closed{Reason: msg})
	if conn != nil {
		conn.shut(errors.New(msg), true)
	}
	if client != nil {
		go client.Close()
	}
}

// Data: inbound chunks are the peer's bytes (ciphertext) for x/crypto;
// outbound chunks are the user's input for the shell channel.
func (s *session) Data(out *sdk.Out, dir sdk.Dir, p []byte) sdk.Action {
	s.enter(out)
	defer s.leave()
	s.mu.Lock()
	state, conn, sh := s.state, s.conn, s.shell
	s.mu.Unlock()
	if state == ended {
		return sdk.Close
	}
	if dir == sdk.Inbound {
		// Bytes before op start (the server speaks first) wait for it.
		if err := conn.feed(p); err != nil {
			s.end("connection", err.Error())
			return sdk.Close
		}
		settle(conn)
		if s.isEnded() {
			return sdk.Close
		}
		return sdk.Consumed
	}
	if sh == nil {
		out.Logf("ssh: user input but no shell channel (op shell)")
		return sdk.Action(abi.ErrBadArg)
	}
	if err := sh.queue(p, false); err != nil {
		out.Logf("ssh: %v", err)
		return sdk.Action(abi.ErrBadArg)
	}
	return sdk.Consumed
}

func (s *session) Tick(out *sdk.Out, now int64) int64 {
	s.enter(out)
	defer s.leave()
	s.mu.Lock()
	state, deadline := s.state, s.deadline
	if state == connecting && deadline > 0 && now >= deadline {
		s.timedOut = true
	}
	timedOut := s.timedOut
	s.mu.Unlock()
	if state == connecting && timedOut {
		// The handshake goroutine sees its reads fail and reports.
		s.conn.shut(errors.New("timed out"), true)
		settle(s.conn)
		return 0
	}
	switch {
	case state == connecting && deadline > 0:
		return deadline
	case !directEmit && state != ended && state != idle:
		return now + nativeTickMs
	}
	return 0
}

func (s *session) Close(out *sdk.Out) {
	s.enter(out)
	s.mu.Lock()
	quitting := s.state == ended
	s.mu.Unlock()
	if !quitting {
		s.end("", "the session was closed")
	}
	s.zeroSecrets()
	settle(s.conn)
	s.mu.Lock()
	s.outbox = nil
	s.mu.Unlock()
}

func (s *session) zeroSecrets() {
	s.mu.Lock()
	for _, b := range s.secrets {
		clear(b)
	}
	s.secrets = nil
	s.mu.Unlock()
}

// request is every control op's fields.
type request struct {
	Op        string            `json:"op"`
	User      string            `json:"user"`
	Host      string            `json:"host"`
	Port      int               `json:"port"`
	Auth      []authMethod      `json:"auth"`
	TimeoutMs int64             `json:"timeoutMs"`
	Ch        int               `json:"ch"`
	Term      string            `json:"term"`
	Cols      int               `json:"cols"`
	Rows      int               `json:"rows"`
	Env       map[string]string `json:"env"`
	Command   string            `json:"command"`
	Pty       bool              `json:"pty"`
	Data      string            `json:"data"`
	Signal    string            `json:"signal"`
	// HostKeyAlgorithms (start) are the host-key types to ask the server
	// for, in order: the host passes those its known_hosts holds for the
	// server, so a known server is verified with the key on record.
	HostKeyAlgorithms []string `json:"hostKeyAlgorithms"`
}

type authMethod struct {
	Method string `json:"method"`
	Keys   []struct {
		ID        string `json:"id"`
		PublicKey string `json:"publicKey"`
	} `json:"keys"`
}

var okReply = []byte(`{"ok":true}`)

func (s *session) Control(out *sdk.Out, raw []byte) ([]byte, error) {
	s.enter(out)
	defer s.leave()
	var req request
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, fmt.Errorf("control request is not JSON: %w", err)
	}
	switch req.Op {
	case "start":
		return s.start(&req)
	case "disconnect":
		s.mu.Lock()
		s.quitting = true
		s.mu.Unlock()
		s.end("", "disconnected")
		return okReply, nil
	}
	s.mu.Lock()
	state, sh := s.state, s.shell
	if req.Op == "resize" && req.Ch == 0 {
		s.cols, s.rows = req.Cols, req.Rows
	}
	s.mu.Unlock()
	if req.Op == "resize" && req.Ch == 0 {
		// The generic resize every plugin gets: the shell's window.
		if err := checkSize(req.Cols, req.Rows); err != nil {
			return nil, err
		}
		if sh != nil {
			sh.resize(req.Cols, req.Rows)
		}
		return okReply, nil
	}
	switch {
	case state == idle:
		return nil, fmt.Errorf("%s: the connection is not started (op start)", req.Op)
	case state == ended:
		return nil, fmt.Errorf("%s: the connection is closed", req.Op)
	}
	switch req.Op {
	case "shell", "exec":
		return s.open(&req)
	case "interrupt":
		// The generic interrupt every plugin gets: ^C into the shell's
		// PTY channel, whose line discipline signals the foreground job
		// (a signal request would reach only the login shell).
		if sh == nil {
			return nil, errors.New("interrupt: no shell channel is open")
		}
		if err := sh.queue([]byte{0x03}, false); err != nil {
			return nil, err
		}
		return okReply, nil
	}
	c, err := s.channel(req.Op, req.Ch)
	if err != nil {
		return nil, err
	}
	switch req.Op {
	case "stdin":
		p, err := base64.StdEncoding.DecodeString(req.Data)
		if err != nil {
			return nil, fmt.Errorf("stdin: data is not base64: %w", err)
		}
		err = c.queue(p, false)
		clear(p)
		if err != nil {
			return nil, err
		}
	case "eof":
		if err := c.queue(nil, true); err != nil {
			return nil, err
		}
	case "signal":
		sig, ok := signalName(req.Signal)
		if !ok {
			return nil, fmt.Errorf("signal: %q is not an SSH signal (ABRT ALRM FPE HUP ILL INT KILL PIPE QUIT SEGV TERM USR1 USR2)", req.Signal)
		}
		c.later(func(ss *ssh.Session) { ss.Signal(ssh.Signal(sig)) })
	case "resize":
		if err := checkSize(req.Cols, req.Rows); err != nil {
			return nil, err
		}
		c.resize(req.Cols, req.Rows)
	case "close":
		c.later(func(ss *ssh.Session) { ss.Close() })
	default:
		return nil, fmt.Errorf("unknown op %q: expected start, shell, exec, stdin, eof, signal, interrupt, resize, close or disconnect", req.Op)
	}
	return okReply, nil
}

func checkSize(cols, rows int) error {
	if cols < 1 || cols > 0xffff || rows < 1 || rows > 0xffff {
		return fmt.Errorf("resize: cols and rows must be 1-65535, got %dx%d", cols, rows)
	}
	return nil
}

func (s *session) channel(op string, ch int) (*channel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chans[ch]
	if c == nil {
		return nil, fmt.Errorf("%s: no open channel %d", op, ch)
	}
	return c, nil
}

var rfcSignals = []string{"ABRT", "ALRM", "FPE", "HUP", "ILL", "INT", "KILL", "PIPE", "QUIT", "SEGV", "TERM", "USR1", "USR2"}

func signalName(s string) (string, bool) {
	s = strings.TrimPrefix(strings.ToUpper(s), "SIG")
	for _, n := range rfcSignals {
		if n == s {
			return n, true
		}
	}
	return "", false
}

// ciphers is x/crypto's default cipher list with chacha20-poly1305 first:
// in wasm, without AES instructions, it decrypts about four times faster
// than AES-GCM.
func ciphers() []string {
	cs := []string{ssh.CipherChaCha20Poly1305}
	for _, c := range ssh.SupportedAlgorithms().Ciphers {
		if c != ssh.CipherChaCha20Poly1305 {
			cs = append(cs, c)
		}
	}
	return cs
}

func (s *session) start(req *request) ([]byte, error) {
	s.mu.Lock()
	state := s.state
	s.mu.Unlock()
	if state != idle {
		return nil, errors.New("start: the connection was already started")
	}
	if req.User == "" || req.Host == "" {
		return nil, errors.New("start: user and host are required")
	}
	if req.Port == 0 {
		req.Port = 22
	}
	if req.Port < 1 || req.Port > 65535 {
		return nil, fmt.Errorf("start: port %d is out of range", req.Port)
	}
	if len(req.Auth) == 0 {
		return nil, errors.New("start: auth lists no method (publickey, password, keyboard-interactive)")
	}
	var auth []ssh.AuthMethod
	for _, m := range req.Auth {
		switch m.Method {
		case "publickey":
			var signers []ssh.Signer
			for _, k := range m.Keys {
				wire, err := base64.StdEncoding.DecodeString(k.PublicKey)
				if err != nil {
					return nil, fmt.Errorf("start: key %q: publicKey is not base64: %w", k.ID, err)
				}
				pub, err := ssh.ParsePublicKey(wire)
				if err != nil {
					return nil, fmt.Errorf("start: key %q: %w", k.ID, err)
				}
				signers = append(signers, &hostSigner{id: k.ID, pub: pub, s: s})
			}
			if len(signers) == 0 {
				return nil, errors.New("start: publickey lists no key")
			}
			auth = append(auth, ssh.PublicKeys(signers...))
		case "password":
			auth = append(auth, ssh.PasswordCallback(s.password))
		case "keyboard-interactive":
			auth = append(auth, ssh.KeyboardInteractive(s.challenge))
		default:
			return nil, fmt.Errorf("start: unknown auth method %q (publickey, password, keyboard-interactive)", m.Method)
		}
	}
	addr := net.JoinHostPort(req.Host, strconv.Itoa(req.Port))
	timeout := req.TimeoutMs
	if timeout <= 0 {
		timeout = defaultTimeoutMs
	}
	cfg := &ssh.ClientConfig{
		User:            req.User,
		Auth:            auth,
		HostKeyCallback: s.checkHostKey,
		BannerCallback: func(msg string) error {
			s.event(abi.Banner{Message: msg})
			return nil
		},
	}
	cfg.Ciphers = ciphers()
	if len(req.HostKeyAlgorithms) > 16 {
		return nil, errors.New("start: more than 16 hostKeyAlgorithms")
	}
	cfg.HostKeyAlgorithms = req.HostKeyAlgorithms
	s.conn.dialed(addr)
	s.mu.Lock()
	s.state, s.ready = connecting, make(chan struct{})
	s.deadline = sdk.NowMs() + timeout
	s.mu.Unlock()
	go s.handshake(cfg, addr, timeout)
	return okReply, nil
}

// password asks the host for the password (host call {"op":"password"});
// the answer is zeroed when the handshake ends. x/crypto takes a string:
// it is made over the answer's bytes, not copied, so zeroing them clears
// it (x/crypto copies it into the packet it encrypts and keeps nothing).
func (s *session) password() (string, error) {
	ans, err := s.hostCall([]byte(`{"op":"password"}`))
	if err != nil {
		return "", fmt.Errorf("no password: %w", err)
	}
	s.mu.Lock()
	s.secrets = append(s.secrets, ans)
	s.mu.Unlock()
	return unsafe.String(unsafe.SliceData(ans), len(ans)), nil
}

// challenge answers keyboard-interactive prompts: hidden ones with the
// password, echoed ones with nothing.
func (s *session) challenge(name, instruction string, questions []string, echos []bool) ([]string, error) {
	answers := make([]string, len(questions))
	for i := range questions {
		if i < len(echos) && echos[i] {
			continue
		}
		pw, err := s.password()
		if err != nil {
			return nil, err
		}
		answers[i] = pw
	}
	return answers, nil
}

// checkHostKey asks the host (host call {"op":"hostkey"}) whether the
// server's key is the one known for it.
func (s *session) checkHostKey(hostname string, remote net.Addr, key ssh.PublicKey) error {
	req, _ := json.Marshal(struct {
		Op     string `json:"op"`
		Host   string `json:"host"`
		Remote string `json:"remote"`
		Key    string `json:"key"`
	}{"hostkey", hostname, remote.String(), base64.StdEncoding.EncodeToString(key.Marshal())})
	_, err := s.hostCall(req)
	if err != nil {
		var re *sdk.RefusedError
		msg := err.Error()
		if !errors.As(err, &re) {
			msg = "the host key could not be checked: " + msg
		}
		s.mu.Lock()
		s.refusal = msg
		s.mu.Unlock()
		return errors.New(msg)
	}
	s.mu.Lock()
	s.kexDone = true
	s.mu.Unlock()
	return nil
}

func (s *session) handshake(cfg *ssh.ClientConfig, addr string, timeoutMs int64) {
	c, chans, reqs, err := ssh.NewClientConn(s.conn, addr, cfg)
	s.zeroSecrets()
	if err != nil {
		s.mu.Lock()
		refusal, kex, timedOut := s.refusal, s.kexDone, s.timedOut
		s.mu.Unlock()
		msg := strings.TrimPrefix(err.Error(), "ssh: handshake failed: ")
		stage := "handshake"
		switch {
		case timedOut:
			msg = fmt.Sprintf("the SSH handshake with %s did not finish within %d ms", addr, timeoutMs)
		case refusal != "":
			msg = refusal
		case kex:
			stage = "auth"
			msg = "authentication failed: " + msg
		}
		s.end(stage, msg)
		close(s.ready)
		return
	}
	client := ssh.NewClient(c, chans, reqs)
	s.mu.Lock()
	if s.state == ended { // closed meanwhile
		s.mu.Unlock()
		client.Close()
		close(s.ready)
		return
	}
	s.state, s.client, s.deadline = connected, client, 0
	s.mu.Unlock()
	cipher := ""
	if am, ok := c.(ssh.AlgorithmsConnMetadata); ok {
		cipher = am.Algorithms().Read.Cipher
	}
	s.event(abi.Connected{ServerVersion: string(c.ServerVersion()), Cipher: cipher})
	close(s.ready)
	err = client.Wait()
	s.mu.Lock()
	quitting := s.quitting
	s.mu.Unlock()
	switch {
	case quitting:
		s.end("", "disconnected")
	case err == nil || errors.Is(err, io.EOF):
		s.end("", "the server closed the connection")
	default:
		s.end("connection", err.Error())
	}
}

// open opens a shell or exec channel.
func (s *session) open(req *request) ([]byte, error) {
	shell := req.Op == "shell"
	if req.Ch < 1 {
		return nil, fmt.Errorf("%s: ch must be a positive integer", req.Op)
	}
	if !shell && req.Command == "" {
		return nil, errors.New("exec: command is empty")
	}
	if shell || req.Pty {
		if req.Term == "" {
			req.Term = "xterm-256color"
		}
		if req.Cols == 0 && req.Rows == 0 {
			req.Cols, req.Rows = 80, 24
		}
		if err := checkSize(req.Cols, req.Rows); err != nil {
			return nil, fmt.Errorf("%s: %w", req.Op, err)
		}
	}
	c := newChannel(s, req.Ch, shell)
	s.mu.Lock()
	if s.chans[req.Ch] != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%s: channel %d is already open", req.Op, req.Ch)
	}
	if shell && s.shell != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("shell: channel %d is already the shell (one shell channel per connection)", s.shell.id)
	}
	s.chans[req.Ch] = c
	if shell {
		s.shell = c
	}
	s.mu.Unlock()
	go c.run(*req)
	return okReply, nil
}

func (s *session) removeChannel(c *channel) {
	s.mu.Lock()
	if s.chans[c.id] == c {
		delete(s.chans, c.id)
	}
	if s.shell == c {
		s.shell = nil
	}
	s.mu.Unlock()
}
