package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// httpOptions are serve's flags for the Streamable HTTP transport.
type httpOptions struct {
	addr        string
	allowRemote bool
	tokenFile   string
	noAuth      bool
}

// defaultHTTPPort is the port of --http when neither it nor PORT names one.
const defaultHTTPPort = "4000"

func (o *httpOptions) register(fs *flags) {
	fs.StringVar(&o.addr, "http", "", "serve MCP over Streamable HTTP at `addr` (endpoint /mcp, both protocol eras) instead of stdio: "+
		"host:port, host, :port, or empty (--http=); the host defaults to 127.0.0.1, the port to $PORT, else "+defaultHTTPPort+
		"; a non-loopback host needs --allow-remote")
	fs.env("http", "TERMHOST_HTTP")
	fs.BoolVar(&o.allowRemote, "allow-remote", false, "let --http bind a non-loopback address and accept any Host header "+
		"(an Origin header must still be localhost); put TLS in front: the bearer token travels in clear")
	fs.env("allow-remote", "TERMHOST_ALLOW_REMOTE")
	fs.StringVar(&o.tokenFile, "token-file", "", "`file` of the bearer token HTTP clients must send (Authorization: Bearer <token>); "+
		"written (0600) at the first start and used again afterwards (default <user config dir>/termhost/token)")
	fs.env("token-file", "TERMHOST_TOKEN_FILE")
	// No environment variable: an inherited one must not switch
	// authentication off unseen.
	fs.BoolVar(&o.noAuth, "no-auth", false, "serve --http without a token: any program or user on this machine can then run "+
		"programs as you; only on a loopback address, never with --allow-remote")
}

// auth returns the token HTTP clients must send and the file it is in,
// or, with --no-auth, nothing (after checking it is allowed).
func (o *httpOptions) auth() (token, file string, reused bool, err error) {
	if o.noAuth {
		if o.allowRemote {
			return "", "", false, usagef("--no-auth cannot be used with --allow-remote: anyone who can reach the address could run programs on this machine")
		}
		return "", "", false, nil
	}
	file = o.tokenFile
	if file == "" {
		if file, err = defaultTokenFile(); err != nil {
			return "", "", false, err
		}
	}
	token, reused, err = loadToken(file)
	return token, file, reused, err
}

// on reports whether --http was given (an empty value included).
func (o *httpOptions) on(fs *flags) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "http" })
	return given
}

// resolve turns --http's value into the address to listen on, and refuses
// a non-loopback one unless --allow-remote says so.
func (o *httpOptions) resolve(ctx context.Context) (string, error) {
	host, port := o.addr, ""
	if h, p, err := net.SplitHostPort(o.addr); err == nil {
		host, port = h, p
	}
	host = strings.Trim(host, "[]")
	if port == "" {
		port = os.Getenv("PORT")
		if n, err := strconv.Atoi(port); port != "" && (err != nil || n < 0 || n > 65535) {
			return "", usagef("environment PORT=%q: expected a port number (0-65535)", port)
		}
	}
	if port == "" {
		port = defaultHTTPPort
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", usagef("--http %q: port %q is not a port number (0-65535)", o.addr, port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	addr := net.JoinHostPort(host, port)
	if o.allowRemote {
		return addr, nil
	}
	if loopback, err := isLoopbackHost(ctx, host); !loopback {
		why := "is not a loopback address"
		if err != nil {
			why = "could not be resolved to check it is a loopback address (" + err.Error() + ")"
		}
		return "", usagef("--http %q: %s %s; anyone who can reach it could run programs on this machine. "+
			"Bind 127.0.0.1 (the default), or add --allow-remote to bind it anyway (then put TLS in front: the bearer token travels in clear)",
			o.addr, host, why)
	}
	return addr, nil
}

// isLoopbackHost reports whether host is, or resolves only to, loopback
// addresses.
func isLoopbackHost(ctx context.Context, host string) (bool, error) {
	if strings.EqualFold(host, "localhost") {
		return true, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().IsLoopback(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return false, err
	}
	for _, ip := range ips {
		if !ip.Unmap().IsLoopback() {
			return false, nil
		}
	}
	return len(ips) > 0, nil
}

// listen opens the listener --http names.
func (o *httpOptions) listen(ctx context.Context) (net.Listener, error) {
	addr, err := o.resolve(ctx)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http: %w", err)
	}
	return ln, nil
}
