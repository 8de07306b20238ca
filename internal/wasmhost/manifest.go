package wasmhost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/termhost/termhost/sdk/abi"
)

// ReadManifest returns the manifest of a plugin without compiling or running
// it, by scanning the module's custom sections.
func ReadManifest(wasm []byte) (abi.Manifest, error) {
	return ReadManifestAt(bytes.NewReader(wasm), int64(len(wasm)))
}

// ReadManifestAt is ReadManifest on a module it reads only the section
// headers and the manifest of (an embedded plugin is not copied or read
// whole to learn its name).
func ReadManifestAt(wasm io.ReaderAt, size int64) (abi.Manifest, error) {
	raw, err := customSection(wasm, size, abi.ManifestSection)
	if err != nil {
		return abi.Manifest{}, err
	}
	return parseManifest(raw)
}

func parseManifest(raw []byte) (abi.Manifest, error) {
	var m abi.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("manifest section %q is not valid JSON: %w", abi.ManifestSection, err)
	}
	switch {
	case m.Name == "":
		return m, fmt.Errorf("manifest: \"name\" is empty")
	case m.Version == "":
		return m, fmt.Errorf("manifest: \"version\" is empty")
	case m.ABI != abi.Version:
		return m, fmt.Errorf("manifest: \"abi\" is %d; this host speaks ABI %d", m.ABI, abi.Version)
	case m.ABIMinor < 0 || m.ABIMinor > abi.Minor:
		return m, fmt.Errorf("manifest: \"abiMinor\" is %d; this host speaks ABI %d.0 to %d.%d (the plugin needs a newer termhost)",
			m.ABIMinor, abi.Version, abi.Version, abi.Minor)
	case m.Kind != "protocol" && m.Kind != "screen" && m.Kind != "dialect":
		return m, fmt.Errorf("manifest: \"kind\" is %q; expected protocol, screen or dialect", m.Kind)
	case m.Failure != "" && m.Failure != "open" && m.Failure != "closed":
		return m, fmt.Errorf("manifest: \"failure\" is %q; expected open or closed", m.Failure)
	case m.Instances != "" && m.Instances != "pooled" && m.Instances != "session":
		return m, fmt.Errorf("manifest: \"instances\" is %q; expected pooled or session", m.Instances)
	}
	for _, k := range m.Sessions {
		if abi.ParseKind(k) == 0 {
			return m, fmt.Errorf("manifest: \"sessions\" names %q; expected telnet, ssh or pty", k)
		}
	}
	return m, nil
}

// maxManifest bounds the manifest section read.
const maxManifest = 1 << 20

// customSection finds a custom section by name in a wasm binary of the
// given size, reading only section headers until it is found.
func customSection(wasm io.ReaderAt, size int64, name string) ([]byte, error) {
	var hdr [8]byte
	if size < 8 {
		return nil, errors.New("not a WebAssembly module (bad magic)")
	}
	if _, err := wasm.ReadAt(hdr[:], 0); err != nil || !bytes.Equal(hdr[:4], []byte("\x00asm")) {
		return nil, errors.New("not a WebAssembly module (bad magic)")
	}
	// at reads up to n bytes at off (fewer at the end of the module).
	at := func(off int64, n int) []byte {
		b := make([]byte, min(int64(n), size-off))
		k, _ := wasm.ReadAt(b, off)
		return b[:k]
	}
	for off := int64(8); off < size; {
		h := at(off, 11) // id + a section size of up to 10 bytes
		id := h[0]
		secSize, n := uleb(h[1:])
		body := off + 1 + int64(n)
		if n == 0 || secSize > uint64(size-body) {
			return nil, errors.New("truncated WebAssembly module")
		}
		off = body + int64(secSize)
		if id != 0 {
			continue
		}
		nh := at(body, int(min(secSize, 10+uint64(len(name)))))
		nl, m := uleb(nh)
		if m == 0 || nl > secSize-uint64(m) {
			return nil, errors.New("malformed custom section")
		}
		if nl != uint64(len(name)) || len(nh) < m+len(name) || string(nh[m:m+len(name)]) != name {
			continue
		}
		payload := secSize - uint64(m) - nl
		if payload > maxManifest {
			return nil, fmt.Errorf("the %q section is %d bytes; at most %d", name, payload, maxManifest)
		}
		data := at(body+int64(m)+int64(nl), int(payload))
		if uint64(len(data)) != payload {
			return nil, errors.New("truncated WebAssembly module")
		}
		return data, nil
	}
	return nil, fmt.Errorf("no %q custom section: not a termhost plugin (build it with sdk/cmd/wasmbuild)", name)
}

func uleb(p []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(p) && i < 10; i++ {
		v |= uint64(p[i]&0x7f) << (7 * i)
		if p[i] < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

// AppendCustomSection adds a custom section (id 0) at the end of a module.
// Custom sections may appear anywhere; this is how wasmbuild stamps the
// manifest into a module Go built.
func AppendCustomSection(wasm []byte, name string, data []byte) []byte {
	var body []byte
	body = appendULEB(body, uint64(len(name)))
	body = append(body, name...)
	body = append(body, data...)
	wasm = append(wasm, 0)
	wasm = appendULEB(wasm, uint64(len(body)))
	return append(wasm, body...)
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// SetManifest returns wasm with its manifest replaced by man (every
// termhost.manifest section removed, a new one appended): for tests and
// tools that derive a variant of a built plugin.
func SetManifest(wasm []byte, man abi.Manifest) ([]byte, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return nil, errors.New("not a WebAssembly module (bad magic)")
	}
	out := append([]byte(nil), wasm[:8]...)
	p := wasm[8:]
	for len(p) > 0 {
		size, n := uleb(p[1:])
		if n == 0 || uint64(len(p)-1-n) < size {
			return nil, errors.New("truncated WebAssembly module")
		}
		sec := p[:1+n+int(size)]
		p = p[len(sec):]
		if sec[0] == 0 {
			body := sec[1+n:]
			if nl, m := uleb(body); m > 0 && uint64(len(body)-m) >= nl && string(body[m:m+int(nl)]) == abi.ManifestSection {
				continue
			}
		}
		out = append(out, sec...)
	}
	raw, err := json.Marshal(man)
	if err != nil {
		return nil, err
	}
	return AppendCustomSection(out, abi.ManifestSection, raw), nil
}
