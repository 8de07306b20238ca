package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/sdk/abi"
)

const readChunk = 32 << 10

// pump reads the link until it fails and feeds every chunk through the
// chain. It owns the read side; it ends when the link is closed.
func (s *Session) pump() {
	defer close(s.pumpDone)
	buf := make([]byte, readChunk)
	tcp, _ := s.link.(*net.TCPConn)
	for {
		n, err := s.link.Read(buf)
		if tcp != nil && n > 0 {
			link.QuickAck(tcp)
		}
		if n > 0 {
			s.chainMu.Lock()
			s.inbound(0, buf[:n])
			s.chainMu.Unlock()
		}
		if err != nil {
			s.ended(err)
			return
		}
	}
}

// ended records why the peer went away and wakes waiters.
func (s *Session) ended(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == StateTerminated {
		return
	}
	switch {
	case errors.Is(err, io.EOF):
		err = errors.New("the peer closed the connection")
	case errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrClosed):
		err = errors.New("the session was closed")
	}
	if s.endErr == nil {
		s.endErr = err
	}
	s.state = StateTerminated
	s.endedAt = time.Now()
	s.notifyLocked()
	s.log.Info("session ended", "reason", s.endErr.Error())
}

// inbound passes p to chain[i] travelling toward the user. Caller holds
// chainMu.
func (s *Session) inbound(i int, p []byte) {
	if i >= len(s.chain) {
		s.deliver(p)
		return
	}
	a, ems, err := s.chain[i].Data(abi.Inbound, p)
	if err != nil {
		name, ver := s.chain[i].Plugin()
		s.log.Warn("plugin refused a chunk; passing it on unprocessed", "plugin", name, "version", ver, "err", err)
		a, ems = abi.Continue, nil
	}
	s.handle(i, ems)
	switch a {
	case abi.Continue:
		s.inbound(i+1, p)
	case abi.Close:
		go s.Close()
	}
}

// outbound passes p to chain[i] travelling toward the peer; below chain[0]
// it is queued for the writer. Caller holds chainMu.
func (s *Session) outbound(i int, p []byte, ack chan error) {
	if i < 0 {
		s.enqueue(p, ack)
		return
	}
	a, ems, err := s.chain[i].Data(abi.Outbound, p)
	if err != nil {
		name, ver := s.chain[i].Plugin()
		s.log.Warn("plugin refused input; passing it on unprocessed", "plugin", name, "version", ver, "err", err)
		a, ems = abi.Continue, nil
	}
	// The caller's ack rides on the last piece this call sends to the peer.
	last := -1
	if a != abi.Continue {
		for j, e := range ems {
			if e.Stream == abi.ToPeer {
				last = j
			}
		}
	}
	s.handleAck(i, ems, last, ack)
	switch {
	case a == abi.Continue:
		s.outbound(i-1, p, ack)
	case last < 0 && ack != nil:
		ack <- nil // nothing to send, nothing to wait for
	}
	if a == abi.Close {
		go s.Close()
	}
}

func (s *Session) handle(i int, ems []abi.Emission) { s.handleAck(i, ems, -1, nil) }

// handleAck routes plugin i's emissions; emission number ackAt carries ack.
func (s *Session) handleAck(i int, ems []abi.Emission, ackAt int, ack chan error) {
	if len(ems) == 0 {
		return
	}
	if len(s.chain) > 1 {
		// A nested call may reach plugin i again and reuse its buffer.
		ems = cloneEmissions(ems)
	}
	for j, e := range ems {
		switch e.Stream {
		case abi.ToUser:
			s.inbound(i+1, e.Data)
		case abi.ToPeer:
			var a chan error
			if j == ackAt {
				a = ack
			}
			s.outbound(i-1, e.Data, a)
		case abi.Event:
			s.event(i, e.Data)
		case abi.Log:
			name, _ := s.chain[i].Plugin()
			s.log.Info("plugin log", "plugin", name, "msg", string(e.Data))
		}
	}
}

func cloneEmissions(ems []abi.Emission) []abi.Emission {
	out := make([]abi.Emission, len(ems))
	for i, e := range ems {
		out[i] = abi.Emission{SID: e.SID, Stream: e.Stream, Data: append([]byte(nil), e.Data...)}
	}
	return out
}

// deliver appends decoded bytes to the buffer and wakes waiters.
func (s *Session) deliver(p []byte) {
	if len(p) == 0 {
		return
	}
	s.buf.Write(p)
	now := time.Now()
	s.mu.Lock()
	s.lastRx, s.lastActive = now, now
	s.notifyLocked()
	s.mu.Unlock()
}

// event records a plugin event at the current buffer offset.
func (s *Session) event(i int, raw []byte) {
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		name, _ := s.chain[i].Plugin()
		s.log.Warn("plugin emitted an event that is not a JSON object", "plugin", name, "err", err)
		return
	}
	typ, _ := fields["type"].(string)
	delete(fields, "type")
	ev := Event{Offset: s.buf.Head(), Type: typ, At: time.Now(), Fields: fields}
	if typ == "plugin_failed" {
		s.log.Error("plugin failed", "plugin", fields["plugin"], "version", fields["version"],
			"error", fields["error"], "outcome", fields["outcome"])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.events) == maxEvents {
		copy(s.events, s.events[1:])
		s.events = s.events[:maxEvents-1]
	}
	s.events = append(s.events, ev)
	if typ == "prompt" {
		if len(s.prompts) == maxEvents {
			copy(s.prompts, s.prompts[1:])
			s.prompts = s.prompts[:maxEvents-1]
		}
		s.prompts = append(s.prompts, ev.Offset)
	}
	s.notifyLocked()
}

// enqueue hands bytes to the writer. It copies p.
func (s *Session) enqueue(p []byte, ack chan error) {
	req := writeReq{p: append([]byte(nil), p...), ack: ack}
	select {
	case s.wq <- req:
	case <-s.quit:
		if ack != nil {
			ack <- s.disconnectedErr()
		}
	}
}

// writer owns the write side of the link.
func (s *Session) writer() {
	for {
		select {
		case <-s.quit:
			return
		case req := <-s.wq:
			err := s.write(req.p)
			if req.ack != nil {
				req.ack <- err
			}
		}
	}
}

func (s *Session) write(p []byte) error {
	if !s.Alive() {
		return s.disconnectedErr()
	}
	s.link.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
	n, err := s.link.Write(p)
	if err == nil {
		return nil
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("the peer stopped reading: write timed out after %v with %d of %d bytes sent", s.cfg.WriteTimeout, n, len(p))
	}
	return fmt.Errorf("write to peer failed: %w", err)
}

// Send writes p to the peer through the chain (outbound: e.g. telnet
// doubles 0xFF) and waits until the bytes are written or the write
// deadline passes.
func (s *Session) Send(ctx context.Context, p []byte) error {
	if !s.Alive() {
		return s.disconnectedErr()
	}
	ack := make(chan error, 1)
	s.chainMu.Lock()
	s.outbound(len(s.chain)-1, p, ack)
	s.chainMu.Unlock()
	s.touch()
	select {
	case err := <-ack:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Session) touch() {
	s.mu.Lock()
	s.lastActive = time.Now()
	s.mu.Unlock()
}

// Control sends a JSON control request (e.g. {"op":"interrupt"}) to the
// chain's plugins, last first, and returns the first reply. With broadcast
// every plugin gets it (resize); otherwise the first that accepts it wins.
// Bytes the plugins emit toward the peer are written before Control returns.
func (s *Session) Control(ctx context.Context, req []byte, broadcast bool) ([]byte, error) {
	if !s.Alive() {
		return nil, s.disconnectedErr()
	}
	var reply []byte
	var firstErr error
	var acks []chan error
	handled := false
	s.chainMu.Lock()
	for i := len(s.chain) - 1; i >= 0; i-- {
		ems, err := s.chain[i].Control(req)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		handled = true
		last := -1
		for j, e := range ems {
			switch {
			case e.Stream == abi.ToPeer:
				last = j
			case e.Stream == abi.Reply && reply == nil:
				reply = append([]byte(nil), e.Data...)
			}
		}
		var ack chan error
		if last >= 0 {
			ack = make(chan error, 1)
			acks = append(acks, ack)
		}
		s.handleAck(i, ems, last, ack)
		if !broadcast {
			break
		}
	}
	s.chainMu.Unlock()
	if !handled {
		return nil, fmt.Errorf("no plugin of this session handles %s: %w", req, firstErr)
	}
	for _, ack := range acks {
		select {
		case err := <-ack:
			if err != nil {
				return reply, err
			}
		case <-ctx.Done():
			return reply, ctx.Err()
		}
	}
	return reply, nil
}

// Close ends the session: closes the link, the chain and the writer. Safe
// to call more than once and from any goroutine.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		if s.state != StateTerminated {
			s.state = StateTerminating
		}
		s.mu.Unlock()
		s.link.Close()
		<-s.pumpDone
		close(s.quit)
		s.chainMu.Lock()
		for _, b := range s.chain {
			b.Close()
		}
		s.chainMu.Unlock()
		s.ended(errors.New("the session was closed"))
	})
}
