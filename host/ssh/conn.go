// Package ssh runs SSH for the tools: it opens SSH sessions (kind ssh;
// Open speaks the ssh plugin's control protocol) from credentials,
// answers the ssh plugin's host calls (password, signatures, host-key
// verdicts) so no secret enters the plugin beyond what the protocol needs, runs commands on exec channels with their
// stdout, stderr and exit status kept apart, and keeps the persistent
// sessions of ssh_execute within the limits of SPEC SSH-1.
package ssh

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	xssh "golang.org/x/crypto/ssh"

	"github.com/termhost/termhost/host/policy"
	"github.com/termhost/termhost/host/secrets"
	"github.com/termhost/termhost/host/session"
)

// CredentialError is a credential that cannot be used: unknown id,
// unreadable key, no agent… (SPEC SSH-7 -32001).
type CredentialError struct{ Err error }

func (e *CredentialError) Error() string { return e.Err.Error() }
func (e *CredentialError) Unwrap() error { return e.Err }

// ConnectError is a failed connection or command (SPEC SSH-7 -32000).
type ConnectError struct{ Err error }

func (e *ConnectError) Error() string { return e.Err.Error() }
func (e *ConnectError) Unwrap() error { return e.Err }

// SessionError is a session problem: limits, a session that ended (SPEC
// SSH-7 -32002).
type SessionError struct{ Err error }

func (e *SessionError) Error() string { return e.Err.Error() }
func (e *SessionError) Unwrap() error { return e.Err }

// conn is what the host keeps for one SSH session: its exec channels and
// the secrets-side state of its host calls.
type conn struct {
	s    *session.Session
	cred secrets.Credential

	mu      sync.Mutex
	chans   map[int]*channel
	repl    *repl // a persistent session's shell
	nextCh  int
	hostErr error // the host-key verdict that refused the server, if any
	// hostKey is the server's key as verified at the handshake: a warm
	// connection is reused only while known_hosts still accepts it.
	hostKey xssh.PublicKey
}

// hostport is the address the connection was made to, as dialled.
func (c *conn) hostport() string { return net.JoinHostPort(c.cred.Host, strconv.Itoa(c.cred.Port)) }

// hostCalls answers the plugin's synchronous requests for one connection.
type hostCalls struct {
	c        *conn
	cred     secrets.Credential
	keys     *secrets.Keys
	hostKeys *secrets.HostKeys
	hostport string
}

type hostReq struct {
	Op        string `json:"op"`
	Key       string `json:"key"`
	Algorithm string `json:"algorithm"`
	Data      string `json:"data"`
	Host      string `json:"host"`
	Remote    string `json:"remote"`
}

// call answers one request. Its errors are short and secret-free: they
// reach the plugin (and may end up in an error event).
func (h *hostCalls) call(raw []byte) ([]byte, error) {
	var req hostReq
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, errors.New("host call: not a JSON request")
	}
	switch req.Op {
	case "password":
		if !h.cred.HasPassword() {
			return nil, fmt.Errorf("credential %q has no password", h.cred.ID)
		}
		return h.cred.Password(), nil
	case "sign":
		if h.keys == nil {
			return nil, errors.New("no keys")
		}
		i, err := keyIndex(req.Key)
		if err != nil {
			return nil, err
		}
		data, err := base64.StdEncoding.DecodeString(req.Data)
		if err != nil {
			return nil, errors.New("sign: data is not base64")
		}
		sig, err := h.keys.Sign(i, req.Algorithm, data)
		if err != nil {
			return nil, fmt.Errorf("sign: %v", err)
		}
		return sig, nil
	case "hostkey":
		kb, err := base64.StdEncoding.DecodeString(req.Key)
		if err != nil {
			return nil, errors.New("hostkey: key is not base64")
		}
		key, err := xssh.ParsePublicKey(kb)
		if err != nil {
			return nil, fmt.Errorf("hostkey: %v", err)
		}
		if err := h.hostKeys.Check(h.hostport, remoteAddr(h.hostport), key); err != nil {
			h.c.mu.Lock()
			h.c.hostErr = err
			h.c.mu.Unlock()
			return nil, err
		}
		h.c.mu.Lock()
		h.c.hostKey = key
		h.c.mu.Unlock()
		return []byte(`{"ok":true}`), nil
	}
	return nil, fmt.Errorf("host call %q is not offered", req.Op)
}

// keyIndex reads a key id "k<n>".
func keyIndex(id string) (int, error) {
	if len(id) < 2 || id[0] != 'k' {
		return 0, fmt.Errorf("sign: unknown key %q", id)
	}
	n, err := strconv.Atoi(id[1:])
	if err != nil {
		return 0, fmt.Errorf("sign: unknown key %q", id)
	}
	return n, nil
}

// remoteAddr is the address known_hosts matches besides the name: the
// host itself when it is an address, else what it resolves to.
func remoteAddr(hostport string) net.Addr {
	host, port, _ := net.SplitHostPort(hostport)
	p, _ := strconv.Atoi(port)
	if ip := net.ParseIP(host); ip != nil {
		return &net.TCPAddr{IP: ip, Port: p}
	}
	if a, err := net.ResolveTCPAddr("tcp", hostport); err == nil {
		return a
	}
	return &net.TCPAddr{IP: net.IPv4zero, Port: p}
}

// authMethods is the plugin's start request's auth list for a credential.
func authMethods(c secrets.Credential, keys *secrets.Keys) []map[string]any {
	switch c.AuthType {
	case secrets.AuthPassword:
		return []map[string]any{{"method": "password"}, {"method": "keyboard-interactive"}}
	default:
		var ks []map[string]any
		for i, pub := range keys.Public() {
			ks = append(ks, map[string]any{"id": "k" + strconv.Itoa(i), "publicKey": base64.StdEncoding.EncodeToString(pub)})
		}
		return []map[string]any{{"method": "publickey", "keys": ks}}
	}
}

// Dialer opens SSH sessions from credentials.
type Dialer struct {
	Sessions *session.Registry
	Attach   session.Attacher
	Creds    *secrets.Store
	HostKeys *secrets.HostKeys
	Rules    *policy.Store
	// ConnectTimeout bounds dial, handshake and authentication (0: 10 s).
	ConnectTimeout time.Duration
}

// ShellOptions open an interactive shell.
type ShellOptions struct {
	Dialect    string // "auto" or a dialect name to attach the dialect plugin
	Name       string
	Owner      string
	Cols, Rows int
	Plugins    []string
	Record     bool // record the session from its start
}

// open connects with credential id; shell opens a PTY shell channel;
// onOpen (optional) is Options.OnOpen.
func (d *Dialer) open(ctx context.Context, credID, owner string, shell *ShellOptions, onOpen func()) (*conn, error) {
	cred, err := d.Creds.Get(credID)
	if err != nil {
		return nil, &CredentialError{err}
	}
	keys, err := cred.Keys()
	if err != nil {
		return nil, &CredentialError{err}
	}
	defer keys.Close() // the agent connection is only needed to authenticate
	c := &conn{cred: cred, chans: map[int]*channel{}, nextCh: ShellChannel + 1}
	hostport := c.hostport()
	hc := &hostCalls{c: c, cred: cred, keys: keys, hostKeys: d.HostKeys, hostport: hostport}
	start := map[string]any{"user": cred.Username, "auth": authMethods(cred, keys)}
	if algs := d.HostKeys.Algorithms(hostport); len(algs) > 0 {
		start["hostKeyAlgorithms"] = algs
	}
	o := Options{
		Host: cred.Host, Port: cred.Port, Owner: owner, Start: start, Timeout: d.ConnectTimeout,
		HostCall: hc.call, OnEvent: c.event, OnOpen: onOpen,
	}
	if shell != nil {
		o.Shell, o.Name, o.Cols, o.Rows, o.Plugins = true, shell.Name, shell.Cols, shell.Rows, shell.Plugins
		o.Dialect, o.Record = shell.Dialect, shell.Record
		if d.Rules != nil {
			var typed policy.Typed
			o.OnInput = func(p []byte) error {
				err := typed.Check(d.Rules.Rules(), p)
				var be *policy.BlockedError
				if errors.As(err, &be) {
					return fmt.Errorf("%w (nothing of this input was sent; the line typed so far, %q, is still unsent: clear it with the key C-u)", err, typed.Pending())
				}
				return err
			}
			if d.Sessions.Config().Plugins.Screen != "" { // without a screen (plugin-directory tests) only the typed-line model checks
				o.LineCheck = &session.LineCheck{
					Active: func() bool { return !d.Rules.Rules().Empty() },
					Check:  d.Rules.Check,
					Refuse: func(reason string) error { return &policy.BlockedError{Reason: reason} },
				}
			}
		}
	}
	s, err := Open(ctx, d.Sessions, d.Attach, o)
	if err != nil {
		c.mu.Lock()
		herr := c.hostErr
		c.mu.Unlock()
		if herr != nil {
			return nil, &ConnectError{fmt.Errorf("%w: %v", ErrSSH, herr)}
		}
		if errors.Is(err, session.ErrLimit) {
			return nil, &SessionError{err}
		}
		return nil, &ConnectError{err}
	}
	c.s = s
	return c, nil
}
