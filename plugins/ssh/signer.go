package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/ssh"
)

// hostSigner is an ssh.AlgorithmSigner whose private key stays in the
// host: Sign is a host call {"op":"sign","key":id,"algorithm":alg,
// "data":base64}, answered with the signature in SSH wire format (RFC 4253
// §6.6: string format, string blob).
type hostSigner struct {
	id  string
	pub ssh.PublicKey
	s   *session
}

var _ ssh.AlgorithmSigner = (*hostSigner)(nil)

func (h *hostSigner) PublicKey() ssh.PublicKey { return h.pub }

func (h *hostSigner) Sign(rand io.Reader, data []byte) (*ssh.Signature, error) {
	return h.SignWithAlgorithm(rand, data, "")
}

func (h *hostSigner) SignWithAlgorithm(_ io.Reader, data []byte, algorithm string) (*ssh.Signature, error) {
	if algorithm == "" {
		algorithm = h.pub.Type()
	}
	req, err := json.Marshal(struct {
		Op        string `json:"op"`
		Key       string `json:"key"`
		Algorithm string `json:"algorithm"`
		Data      string `json:"data"`
	}{"sign", h.id, algorithm, base64.StdEncoding.EncodeToString(data)})
	if err != nil {
		return nil, err
	}
	ans, err := h.s.hostCall(req)
	clear(req) // the data signed is the session's: not kept
	if err != nil {
		return nil, fmt.Errorf("the host did not sign with key %q: %w", h.id, err)
	}
	sig, err := parseSignature(ans)
	if err != nil {
		return nil, fmt.Errorf("the host's signature with key %q: %w", h.id, err)
	}
	if sig.Format != algorithm {
		return nil, fmt.Errorf("the host signed with %s, not %s as asked", sig.Format, algorithm)
	}
	return sig, nil
}

// parseSignature reads an SSH wire-format signature: string format, string
// blob, and nothing after (sk-* signatures carry more: not supported).
func parseSignature(b []byte) (*ssh.Signature, error) {
	format, rest, ok := sshString(b)
	if !ok {
		return nil, errors.New("not an SSH signature (wire format: string format, string blob)")
	}
	blob, rest, ok := sshString(rest)
	if !ok || len(rest) != 0 || len(format) == 0 {
		return nil, errors.New("not an SSH signature (wire format: string format, string blob)")
	}
	return &ssh.Signature{Format: string(format), Blob: append([]byte(nil), blob...)}, nil
}

func sshString(b []byte) (s, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}
