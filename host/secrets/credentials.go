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
