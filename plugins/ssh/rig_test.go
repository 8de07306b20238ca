// The tests need a real SSH server (internal/sshtest: processes, PTYs):
// not for the wasip1 vet of plugins/.

//go:build !wasip1

package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/termhost/termhost/internal/sshtest"
	"github.com/termhost/termhost/sdk/abi"
	"github.com/termhost/termhost/sdk/sdktest"
)

const (
	secret = "s3cret-Pa55phrase"
	sid    = 1
)

// rig plays termhost's part for one plugin session: it owns the TCP socket
// to an sshtest server, feeds what it reads to the plugin (one goroutine
// owns the plugin, as the host's single-threaded instance), writes to_peer
// to the socket, ticks, and answers host calls like the session layer
// would (known host key, signing keys, password).
type rig struct {
	t   testing.TB
	p   sdktest.Plugin
	srv *sshtest.Server
	nc  net.Conn

	// split cuts inbound socket data into pieces of at most this many
	// bytes (0: as read); corrupt, when set (under mu), may alter an inbound chunk
	// before the plugin sees it.
	split   func() int
	corrupt func([]byte)

	calls chan func()
	stop  chan struct{}
	done  chan struct{}

	// discard: data events and to_user bytes are counted, not kept (for
	// benchmarks).
	discard bool

	mu       sync.Mutex
	cond     sync.Cond
	counted  int // bytes of data events and to_user discarded
	dataN    int // inbound on_data calls, and their time
	callTime time.Duration
	user     []byte
	events   [][]byte
	logs     []string
	peer     int // bytes written to the socket
	ended    bool
	endErr   error
	hostKey  ssh.PublicKey // the key the host knows for the server
	keys     map[string]ssh.Signer
	password string
	seen     []string // host call ops, with the sign algorithm
}

func newRig(t testing.TB, p sdktest.Plugin, srv *sshtest.Server) *rig {
	r := &rig{t: t, p: p, srv: srv, calls: make(chan func()), stop: make(chan struct{}), done: make(chan struct{}),
		hostKey: srv.HostKey(), keys: map[string]ssh.Signer{}, password: secret}
	r.cond.L = &r.mu
	p.SetHostCall(r.hostCall)
	return r
}

// hostCall answers the plugin as termhost's SSH session layer would.
func (r *rig) hostCall(_ uint32, req []byte) ([]byte, error) {
	var q struct {
		Op, Host, Remote, Key, Algorithm, Data string
	}
	if err := json.Unmarshal(req, &q); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, strings.TrimSpace(q.Op+" "+q.Algorithm))
	switch q.Op {
	case "hostkey":
		wire, _ := base64.StdEncoding.DecodeString(q.Key)
		if r.hostKey == nil || !bytes.Equal(wire, r.hostKey.Marshal()) {
			return nil, fmt.Errorf("REMOTE HOST IDENTIFICATION HAS CHANGED for %s: known_hosts holds another key", q.Host)
		}
		return []byte(`{"ok":true}`), nil
	case "password":
		return []byte(r.password), nil
	case "sign":
		k := r.keys[q.Key]
		if k == nil {
			return nil, fmt.Errorf("no key %q", q.Key)
		}
		data, _ := base64.StdEncoding.DecodeString(q.Data)
		sig, err := k.(ssh.AlgorithmSigner).SignWithAlgorithm(rand.Reader, data, q.Algorithm)
		if err != nil {
			return nil, err
		}
		return ssh.Marshal(sig), nil
	case "panic":
		panic("host call told to panic")
	}
	return nil, fmt.Errorf("unknown op %q", q.Op)
}

// connect dials the server, opens the session and starts the pump.
func (r *rig) connect(start string) {
	r.t.Helper()
	nc, err := net.Dial("tcp", r.srv.Addr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.nc = nc
	if _, err := r.p.Open(sid, abi.KindSSH, nil); err != nil {
		r.t.Fatal(err)
	}
	sock := make(chan []byte, 4)
	go func() {
		defer close(sock)
		for {
			b := make([]byte, 32<<10)
			n, err := nc.Read(b)
			if n > 0 {
				select {
				case sock <- b[:n]:
				case <-r.stop:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go r.pump(sock)
	r.t.Cleanup(r.close)
	r.control(start)
}

func (r *rig) close() {
	select {
	case <-r.stop:
		return
	default:
	}
	r.do(func() { r.p.CloseSession(sid) })
	close(r.stop)
	r.nc.Close()
	<-r.done
}

func (r *rig) pump(sock chan []byte) {
	defer close(r.done)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.stop:
			return
		case f := <-r.calls:
			f()
		case <-tick.C:
			_, ems, err := r.p.Tick(time.Now().UnixMilli())
			r.take(ems, err)
		case b, ok := <-sock:
			if !ok {
				sock = nil
				r.mu.Lock()
				r.ended = true
				r.cond.Broadcast()
				r.mu.Unlock()
				continue
			}
			r.mu.Lock()
			corrupt := r.corrupt
			r.mu.Unlock()
			if corrupt != nil {
				corrupt(b)
			}
			for len(b) > 0 {
				n := len(b)
				if r.split != nil {
					n = min(n, max(1, r.split()))
				}
				t0 := time.Now()
				a, ems, err := r.p.Data(sid, abi.Inbound, b[:n])
				d := time.Since(t0)
				r.mu.Lock()
				r.dataN++
				r.callTime += d
				if a == abi.Close || err != nil {
					r.ended = true // before the emissions are seen
				}
				r.mu.Unlock()
				r.take(ems, err)
				b = b[n:]
				if a == abi.Close || err != nil {
					break
				}
			}
		}
	}
}

// take handles a call's emissions (on the pump goroutine).
func (r *rig) take(ems []abi.Emission, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.cond.Broadcast()
	if err != nil && r.endErr == nil {
		r.endErr = err
	}
	for _, e := range ems {
		switch e.Stream {
		case abi.ToUser:
			if r.discard {
				r.counted += len(e.Data)
				continue
			}
			r.user = append(r.user, e.Data...)
		case abi.ToPeer:
			r.peer += len(e.Data)
			if _, err := r.nc.Write(e.Data); err != nil && r.endErr == nil {
				r.endErr = err
			}
		case abi.Channel:
			d, err := abi.DecodeChannel(e.Data)
			if err != nil {
				r.t.Errorf("channel emission: %v", err)
				continue
			}
			if r.discard {
				r.counted += len(d.Data)
				continue
			}
			// Kept among the events, in their order, in ABI 1.0's form
			// (a data event): the tests read exec output from there.
			r.events = append(r.events, d.AppendEvent(nil))
		case abi.Event:
			r.events = append(r.events, bytes.Clone(e.Data))
		case abi.Log:
			r.logs = append(r.logs, string(e.Data))
		}
	}
}

// do runs f on the pump goroutine.
func (r *rig) do(f func()) {
	done := make(chan struct{})
	select {
	case r.calls <- func() { f(); close(done) }:
		<-done
	case <-r.done:
	}
}

// control sends a control request; it fails the test unless the plugin
// answers {"ok":true}.
func (r *rig) control(req string) {
	r.t.Helper()
	if err := r.tryControl(req); err != nil {
		r.t.Fatalf("control %s: %v", req, err)
	}
}

func (r *rig) tryControl(req string) error {
	var err error
	r.do(func() {
		var ems []abi.Emission
		ems, err = r.p.Control(sid, []byte(req))
		reply := sdktest.Collect(ems, abi.Reply)
		r.take(ems, nil)
		if err == nil && string(reply) != `{"ok":true}` {
			err = fmt.Errorf("reply %q", reply)
		}
	})
	return err
}

// input sends user input (an outbound chunk).
func (r *rig) input(s string) {
	r.t.Helper()
	var err error
	r.do(func() {
		var ems []abi.Emission
		_, ems, err = r.p.Data(sid, abi.Outbound, []byte(s))
		r.take(ems, nil)
	})
	if err != nil {
		r.t.Fatalf("input: %v", err)
	}
}

type event struct {
	Type, Message, Stage, Stream, Data, Signal, Reason, ServerVersion, Cipher string
	Ch                                                                        int
	Code                                                                      *int
}

// wait waits (at most 20 s) for an event that satisfies ok and returns it.
func (r *rig) wait(what string, ok func(event) bool) event {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	timer := time.AfterFunc(20*time.Second, func() { r.mu.Lock(); r.cond.Broadcast(); r.mu.Unlock() })
	defer timer.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := 0
	for {
		for ; seen < len(r.events); seen++ {
			var ev event
			if err := json.Unmarshal(r.events[seen], &ev); err != nil {
				r.t.Fatalf("event %q: %v", r.events[seen], err)
			}
			if ok(ev) {
				return ev
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no %s event within 20 s; events %s; logs %q; error %v", what, r.eventText(), r.logs, r.endErr)
		}
		r.cond.Wait()
	}
}

func (r *rig) waitType(typ string) event {
	r.t.Helper()
	return r.wait(typ, func(e event) bool { return e.Type == typ })
}

// waitUser waits (at most 20 s) until what reached the user contains s.
func (r *rig) waitUser(s string) {
	r.t.Helper()
	if !r.userWithin(s, 20*time.Second) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.t.Fatalf("%q never reached the user; got %q; events %s", s, r.user, r.eventText())
	}
}

// userWithin says whether what reached the user contains s within d.
func (r *rig) userWithin(s string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	timer := time.AfterFunc(d, func() { r.mu.Lock(); r.cond.Broadcast(); r.mu.Unlock() })
	defer timer.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for !bytes.Contains(r.user, []byte(s)) {
		if time.Now().After(deadline) {
			return false
		}
		r.cond.Wait()
	}
	return true
}

func (r *rig) eventText() string {
	var b []string
	for _, e := range r.events {
		if len(e) > 200 {
			e = append(e[:200:200], "…"...)
		}
		b = append(b, string(e))
	}
	return strings.Join(b, "\n")
}

// output gathers an exec channel's data events.
func (r *rig) output(ch int) (stdout, stderr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var o, e []byte
	for _, raw := range r.events {
		var ev event
		json.Unmarshal(raw, &ev)
		if ev.Type != "data" || ev.Ch != ch {
			continue
		}
		d, err := base64.StdEncoding.DecodeString(ev.Data)
		if err != nil {
			r.t.Fatalf("data event %q: %v", raw, err)
		}
		if ev.Stream == "stderr" {
			e = append(e, d...)
		} else {
			o = append(o, d...)
		}
	}
	return string(o), string(e)
}

// noSecret fails the test if the password appears in anything the plugin
// emitted toward the user, as an event or in a log line.
func (r *rig) noSecret() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	all := append(append([]byte(nil), r.user...), strings.Join(r.logs, "\n")...)
	for _, e := range r.events {
		all = append(all, e...)
	}
	for _, enc := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
		if bytes.Contains(all, []byte(enc)) {
			r.t.Errorf("the password appears in what the plugin emitted")
		}
	}
}

func (r *rig) addKey(id string, k ssh.Signer) string {
	r.mu.Lock()
	r.keys[id] = k
	r.mu.Unlock()
	return fmt.Sprintf(`{"id":%q,"publicKey":%q}`, id, base64.StdEncoding.EncodeToString(k.PublicKey().Marshal()))
}

func (r *rig) seenOps() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func startReq(srv *sshtest.Server, user, auth string) string {
	return fmt.Sprintf(`{"op":"start","user":%q,"host":"127.0.0.1","port":%d,"auth":[%s]}`, user, srv.Port, auth)
}
