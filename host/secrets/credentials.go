// Package secrets holds what termhost must never show: SSH credentials
// (credentials.json, SPEC SSH-4), the private keys and agent they name,
// and the host keys termhost trusts (known_hosts, SPEC SSH-5). Secrets
// stay in this package's unexported fields; what leaves it is either
// public (Info) or an operation that uses a secret without revealing it
// (Sign, Password).
package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Auth types of a credential.
const (
	AuthKey      = "key"
	AuthPassword = "password"
	AuthAgent    = "agent"
)

// Info is what may be shown about a credential (ssh_list_credentials):
// never a secret.
type Info struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	Host string `json:"host"`
	Port int    `json:"port"`
	// Username is empty only for a device credential of a password-only
	// line (SPEC DEV-3), which SSH cannot use.
	Username string `json:"username,omitempty"`
	AuthType string `json:"authType"`
	// Hosts and Programs are where else the credential may be used
	// (SPEC TRUST-1), as the file writes them.
	Hosts    []string `json:"hosts,omitempty"`
	Programs []string `json:"programs,omitempty"`
	// Kinds are the kinds of session its secrets go to (KindSSH,
	// KindTelnet): as the file writes them, else the default of how the
	// credential is written (DefaultKinds).
	Kinds []string `json:"kinds"`
}

// The kinds of session a credential may be for (credentials.json's
// "kinds"): its secrets travel over SSH (encrypted, to a server whose key
// is checked) or over Telnet (in clear).
const (
	KindSSH    = "ssh"
	KindTelnet = "telnet"
)

// credKinds are the kinds a credential may name, in the order errors list
// them.
var credKinds = []string{KindSSH, KindTelnet}

// DefaultKinds are the kinds of a credential whose entry has no "kinds":
// one written with "authType" (key, password or agent) is an SSH
// credential, for SSH only; a device credential (a password and no
// authType, SPEC DEV-3) is for Telnet only. An SSH credential's password
// is thus never typed into Telnet, in clear, unless the file says so.
func DefaultKinds(authTypeWritten bool) []string {
	if authTypeWritten {
		return []string{KindSSH}
	}
	return []string{KindTelnet}
}

// For reports whether the credential may be used for sessions of kind
// (KindSSH, KindTelnet). A local program is not a kind: "programs" says
// which ones a credential may be typed into.
func (c Credential) For(kind string) bool {
	for _, k := range c.kinds() {
		if k == kind {
			return true
		}
	}
	return false
}

// KindError is a credential used for a kind of session it is not for.
type KindError struct {
	ID      string
	Kind    string   // the kind it was used for
	Kinds   []string // the kinds it is for
	Written bool     // the file gives "kinds" (else they are the default)
	Device  bool     // a device credential: no authType in the file
}

func (e *KindError) Error() string {
	kinds, _ := json.Marshal(e.Kinds)
	why := "as its entry in credentials.json says"
	switch {
	case e.Written:
	case e.Device:
		why = "the default for a device credential, written without \"authType\""
	default:
		why = "the default for a credential written with \"authType\""
	}
	msg := fmt.Sprintf("credential %q is not for %s sessions: its \"kinds\" is %s (%s)", e.ID, kindWord(e.Kind), kinds, why)
	if e.Kind == KindTelnet {
		msg += "; a secret of an SSH credential is never typed into Telnet, where it travels in clear"
	}
	return msg + fmt.Sprintf("; add %q to its \"kinds\" in credentials.json if it is meant for both", e.Kind)
}

func kindWord(kind string) string {
	switch kind {
	case KindSSH:
		return "SSH"
	case KindTelnet:
		return "Telnet"
	}
	return kind
}

// CheckKind is nil when the credential may be used for sessions of kind,
// else a *KindError naming its "kinds".
func (c Credential) CheckKind(kind string) error {
	if c.For(kind) {
		return nil
	}
	return &KindError{ID: c.ID, Kind: kind, Kinds: c.kinds(), Written: c.kindsWritten, Device: c.device}
}

// kinds are the credential's kinds: Kinds, or for a credential not read
// from a file (Kinds unset), the default of how it is made.
func (c Credential) kinds() []string {
	if c.Kinds == nil {
		return DefaultKinds(!c.device)
	}
	return c.Kinds
}

// Credential is one entry of credentials.json with its secrets decoded.
type Credential struct {
	Info
	// PrivateKeyPath is the key file (authType key; for agent, optionally
	// the public or private key file choosing which agent key to use).
	PrivateKeyPath string

	password     []byte
	passphrase   []byte
	enableSecret []byte
	portGiven    bool
	hosts        []target // the "hosts" entries, parsed
	programs     []string // the "programs" entries
	kindsWritten bool     // the file gives "kinds"
	device       bool     // a device credential: no authType in the file
}

// PortOr is the credential's port, or def when the file gave none (a
// device credential used for Telnet defaults to 23, not SSH's 22).
func (c Credential) PortOr(def int) int {
	if c.portGiven {
		return c.Port
	}
	return def
}

// String never prints a secret, whatever verb is used.
func (c Credential) String() string {
	user := ""
	if c.Username != "" {
		user = c.Username + "@"
	}
	return fmt.Sprintf("credential %q (%s%s:%d, %s)", c.ID, user, c.Host, c.Port, c.AuthType)
}

// GoString is String, so %#v does not print the secrets either.
func (c Credential) GoString() string { return c.String() }

// Password returns a copy of the password (authType password); the caller
// zeroes it after use.
func (c Credential) Password() []byte { return bytes.Clone(c.password) }

// Fields send_secret can type.
var Fields = []string{"username", "password", "enableSecret", "passphrase"}

// Secret returns a copy of one of the credential's fields for the host to
// type (send_secret, logins); the caller zeroes it after use.
func (c Credential) Secret(field string) ([]byte, error) {
	var v []byte
	switch field {
	case "username":
		v = []byte(c.Username)
	case "password":
		v = c.password
	case "enableSecret":
		v = c.enableSecret
	case "passphrase":
		v = c.passphrase
	default:
		return nil, fmt.Errorf("field %q is not one of %s", field, strings.Join(Fields, ", "))
	}
	if len(v) == 0 {
		return nil, fmt.Errorf("credential %q has no %s", c.ID, field)
	}
	return bytes.Clone(v), nil
}

// HasPassword reports whether the credential carries a password.
func (c Credential) HasPassword() bool { return len(c.password) > 0 }

// Defaults fill what an entry leaves out (SSH_KEY_PATH, SSH_PASSPHRASE).
type Defaults struct {
	KeyPath    string
	Passphrase string // plain text, as the environment variable gives it
}

// DefaultsFromEnv reads SSH_KEY_PATH and SSH_PASSPHRASE.
func DefaultsFromEnv() Defaults {
	return Defaults{KeyPath: os.Getenv("SSH_KEY_PATH"), Passphrase: os.Getenv("SSH_PASSPHRASE")}
}

// file is credentials.json as written (seed 001 §3.1).
type file struct {
	Version     string      `json:"version"`
	Credentials []fileEntry `json:"credentials"`
}

type fileEntry struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	Host           string `json:"host"`
	Port           *int   `json:"port"`
	Username       string `json:"username"`
	AuthType       string `json:"authType"`
	PrivateKeyPath string `json:"privateKeyPath"`
	Passphrase     string `json:"passphrase"`
	Password       string `json:"password"`
	EnableSecret   string `json:"enableSecret"`
	// Hosts: other targets the credential may be used for; Programs:
	// local programs it may be typed into (SPEC TRUST-1).
	Hosts    []string `json:"hosts"`
	Programs []string `json:"programs"`
	// Kinds: the kinds of session the credential is for (DefaultKinds
	// when absent).
	Kinds []string `json:"kinds"`
}

// Parse reads credentials.json. Every mistake names the entry and field
// and says what was expected; no error carries a secret.
func Parse(data []byte, d Defaults) ([]Credential, error) {
	var f file
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not valid credentials JSON: %s", jsonErr(err))
	}
	if dec.More() {
		return nil, errors.New("not valid credentials JSON: more than one value in the file")
	}
	if f.Version != "" && f.Version != "1.0" && f.Version != "1" {
		return nil, fmt.Errorf("version: %q is not supported (expected \"1.0\")", f.Version)
	}
	seen := map[string]bool{}
	out := make([]Credential, 0, len(f.Credentials))
	for i, e := range f.Credentials {
		where := fmt.Sprintf("credentials[%d]", i)
		if e.ID != "" {
			where = fmt.Sprintf("credentials[%d] (%q)", i, e.ID)
		}
		c, err := e.credential(d)
		if err != nil {
			return nil, fmt.Errorf("%s.%w", where, err)
		}
		if seen[c.ID] {
			return nil, fmt.Errorf("%s.id: %q is used twice (ids must be unique)", where, c.ID)
		}
		seen[c.ID] = true
		out = append(out, c)
	}
	return out, nil
}

// jsonErr describes a decoding error without quoting the file's bytes (a
// syntax error's message never holds them; a type error names the field).
func jsonErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %s: expected %s, got a JSON %s", te.Field, te.Type, te.Value)
	}
	if strings.HasPrefix(err.Error(), "json: unknown field") {
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	if errors.Is(err, errors.ErrUnsupported) {
		return "unsupported"
	}
	return "cannot decode (" + strings.TrimPrefix(err.Error(), "json: ") + ")"
}

func (e fileEntry) credential(d Defaults) (Credential, error) {
	c := Credential{Info: Info{ID: e.ID, Name: e.Name, Host: e.Host, Username: e.Username, AuthType: e.AuthType}, PrivateKeyPath: e.PrivateKeyPath}
	if strings.TrimSpace(e.ID) == "" {
		return c, errors.New("id: missing (expected a non-empty string)")
	}
	if len(e.ID) > 128 || strings.ContainsAny(e.ID, "\x00\r\n") {
		return c, errors.New("id: expected at most 128 characters on one line")
	}
	if strings.TrimSpace(e.Host) == "" {
		return c, errors.New("host: missing (expected a host name or address)")
	}
	if strings.ContainsAny(e.Host, " /\x00\r\n") {
		return c, fmt.Errorf("host: %q is not a host name or address", e.Host)
	}
	c.Port = 22
	if e.Port != nil {
		if *e.Port < 1 || *e.Port > 65535 {
			return c, fmt.Errorf("port: %d is out of range (expected 1–65535)", *e.Port)
		}
		c.Port, c.portGiven = *e.Port, true
	}
	if e.Username == "" && e.AuthType != "" {
		// A device credential (no authType, a password) may leave it
		// out: Cisco's line vty and FRR's vty ask for a password only.
		return c, errors.New("username: missing (expected the login name; only a device credential, with a password and no authType, may leave it out)")
	}
	if strings.ContainsAny(e.Username, "\x00\r\n") {
		return c, errors.New("username: expected one line (no CR, LF or NUL)")
	}
	if err := c.setTargets(e.Hosts, e.Programs); err != nil {
		return c, err
	}
	if err := c.setKinds(e.Kinds, e.AuthType != ""); err != nil {
		return c, err
	}
	switch e.AuthType {
	case AuthKey:
		if c.PrivateKeyPath == "" {
			c.PrivateKeyPath = d.KeyPath
		}
		if c.PrivateKeyPath == "" {
			return c, errors.New("privateKeyPath: missing (expected the path of a private key file, or set SSH_KEY_PATH)")
		}
		if e.Password != "" {
			return c, errors.New("password: not used with authType \"key\" (remove it, or use authType \"password\")")
		}
	case AuthPassword:
		if e.Password == "" {
			return c, errors.New("password: missing (expected the base64 of the password)")
		}
	case AuthAgent:
		if e.Password != "" {
			return c, errors.New("password: not used with authType \"agent\"")
		}
	case "":
		if e.Password == "" {
			return c, errors.New("authType: missing (expected \"key\", \"password\" or \"agent\")")
		}
		// A device credential (SPEC DEV-3) may leave it out: a password
		// says what it is.
		c.AuthType = AuthPassword
	default:
		return c, fmt.Errorf("authType: %q is not known (expected \"key\", \"password\" or \"agent\")", e.AuthType)
	}
	if c.PrivateKeyPath != "" {
		c.PrivateKeyPath = expandHome(c.PrivateKeyPath)
	}
	var err error
	if e.Password != "" {
		if c.password, err = decode64(e.Password); err != nil {
			return c, fmt.Errorf("password: %w", err)
		}
	}
	if e.EnableSecret != "" {
		if c.enableSecret, err = decode64(e.EnableSecret); err != nil {
			return c, fmt.Errorf("enableSecret: %w", err)
		}
	}
	if e.Passphrase != "" {
		if c.passphrase, err = decode64(e.Passphrase); err != nil {
			return c, fmt.Errorf("passphrase: %w", err)
		}
	} else if d.Passphrase != "" && e.AuthType == AuthKey {
		c.passphrase = []byte(d.Passphrase)
	}
	return c, nil
}

// setKinds checks the "kinds" entries, or sets the default.
func (c *Credential) setKinds(kinds []string, authType bool) error {
	c.device = !authType
	if kinds == nil {
		c.Kinds = DefaultKinds(authType)
		return nil
	}
	if len(kinds) == 0 {
		return fmt.Errorf("kinds: empty (expected one or more of %q; leave it out for the default: %q with authType, %q without)", credKinds, KindSSH, KindTelnet)
	}
	c.kindsWritten = true
	c.Kinds = make([]string, 0, len(kinds))
	for i, k := range kinds {
		if k != KindSSH && k != KindTelnet {
			return fmt.Errorf("kinds[%d]: %q is not a kind of session a credential is for (expected %q or %q)", i, k, KindSSH, KindTelnet)
		}
		if !slices.Contains(c.Kinds, k) {
			c.Kinds = append(c.Kinds, k)
		}
	}
	return nil
}

// decode64 accepts standard base64 with or without padding; the error
// never quotes the value.
func decode64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not valid base64 (the file keeps passwords and passphrases base64-encoded: `printf %s 'secret' | base64`)")
}

// expandHome turns a leading ~/ into the home directory.
func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, p[1:])
		}
	}
	return p
}
