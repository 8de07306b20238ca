package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"sync"
)

// The secrets check of the whole run (SPEC SSH-10, DEV-3): every server a
// test starts with --credentials has each secret of that file (passwords,
// enable secrets, passphrases, as they stand when the server stops) looked
// for in every tool result and error the test received and in every line
// the server logged (at debug level). A test that means to show a secret
// (one the agent typed itself) says so with allowSecret.

// transcript keeps what a server returned to its test.
type transcript struct {
	mu      sync.Mutex
	b       strings.Builder
	allowed map[string]bool
}

func (tr *transcript) add(s string) {
	tr.mu.Lock()
	tr.b.WriteString(s)
	tr.b.WriteByte('\n')
	tr.mu.Unlock()
}

// allowSecret exempts a secret the test itself sends in the clear.
func (h *hostProc) allowSecret(s string) {
	h.seen.mu.Lock()
	defer h.seen.mu.Unlock()
	if h.seen.allowed == nil {
		h.seen.allowed = map[string]bool{}
	}
	h.seen.allowed[s] = true
}

// minSecret: shorter secrets ("x", "nope") would match by chance.
const minSecret = 6

// credentialSecrets reads the secrets of a credentials file.
func credentialSecrets(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var f struct {
		Credentials []map[string]any `json:"credentials"`
	}
	if json.Unmarshal(b, &f) != nil {
		return nil
	}
	var out []string
	for _, c := range f.Credentials {
		for _, k := range []string{"password", "enableSecret", "passphrase"} {
			v, _ := c[k].(string)
			if d, err := base64.StdEncoding.DecodeString(v); err == nil && len(d) >= minSecret {
				out = append(out, string(d))
			}
		}
	}
	return out
}

// checkLeaks fails the test when a secret of the server's credentials
// shows in a result or a log line.
func (h *hostProc) checkLeaks() {
	var files []string
	for i, a := range h.cmd.Args {
		if a == "--credentials" && i+1 < len(h.cmd.Args) {
			files = append(files, h.cmd.Args[i+1])
		} else if v, ok := strings.CutPrefix(a, "--credentials="); ok {
			files = append(files, v)
		}
	}
	h.seen.mu.Lock()
	results, allowed := h.seen.b.String(), h.seen.allowed
	h.seen.mu.Unlock()
	logs := h.logs.String()
	for _, f := range files {
		for _, s := range credentialSecrets(f) {
			if allowed[s] {
				continue
			}
			// Results are JSON text: a secret with <, > or & in it shows
			// escaped there.
			q, _ := json.Marshal(s)
			for _, form := range []string{s, string(q[1 : len(q)-1])} {
				if i := strings.Index(results, form); i >= 0 {
					h.t.Errorf("a secret of %s shows in a tool result: …%s…", f, clipAround(results, i, len(form)))
					break
				}
			}
			if i := strings.Index(logs, s); i >= 0 {
				h.t.Errorf("a secret of %s shows in the server's log: …%s…", f, clipAround(logs, i, len(s)))
			}
		}
	}
}

// clipAround shows where a secret was found with the secret itself masked.
func clipAround(s string, i, n int) string {
	lo, hi := max(0, i-60), min(len(s), i+n+60)
	return s[lo:i] + "<SECRET>" + s[i+n:hi]
}
