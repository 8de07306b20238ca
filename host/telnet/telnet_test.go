package telnet

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/termhost/termhost/host/session"
	"github.com/termhost/termhost/internal/wasmhost"
	"github.com/termhost/termhost/sdk/abi"
)

// TestTelnetOverTCP: the Telnet kind is a TCP link plus the telnet plugin
// first in the chain; limits and names apply.
func TestTelnetOverTCP(t *testing.T) {
	r := session.NewRegistry(session.Limits{MaxSessions: 1}, session.Config{Plugins: session.Plugins{Dialect: "dialect"}})
	t.Cleanup(r.Close)
	port := holdingListener(t)
	var names []string
	attach := func(name string, _ abi.Kind, _ []byte) (session.Binding, error) {
		names = append(names, name)
		return pass(name), nil
	}
	s1, err := Open(context.Background(), r, attach, Options{Host: "[::1]", Port: port, Timeout: time.Second, Name: "r1"})
	if err == nil {
		s1.Close()
	}
	s1, err = Open(context.Background(), r, attach, Options{Host: "127.0.0.1", Port: port, Timeout: time.Second, Name: "r1", Plugins: []string{"dialect"}})
	if err != nil {
		t.Fatal(err)
	}
	if names[len(names)-2] != "telnet" || names[len(names)-1] != "dialect" {
		t.Fatalf("chain %v", names)
	}
	if got, err := r.Get("", "r1"); err != nil || got != s1 {
		t.Fatalf("by name: %v", err)
	}
	_, err = Open(context.Background(), r, attach, Options{Host: "127.0.0.1", Port: port, Timeout: time.Second})
	if !errors.Is(err, session.ErrLimit) {
		t.Fatalf("second open: %v, want RESOURCE_LIMIT", err)
	}
	if !r.Remove(s1.ID) || r.Remove(s1.ID) {
		t.Fatal("Remove should report true once, then false")
	}
	if _, err := r.Get("", s1.ID); !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("get removed: %v", err)
	}
}

// pass is a plugin binding that lets everything pass.
type pass string

func (pass) Data(abi.Dir, []byte, wasmhost.Sink) (abi.Action, error) { return abi.Continue, nil }
func (pass) Control([]byte, wasmhost.Sink) error                     { return errors.New("unsupported") }
func (pass) OnAsync(func([]abi.Emission))                            {}
func (pass) Close()                                                  {}
func (p pass) Plugin() (name, version string)                        { return string(p), "test" }

// holdingListener accepts connections on loopback and keeps them open
// until the test ends; it returns the port.
func holdingListener(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}
