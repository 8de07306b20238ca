package devsim

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"
)

// Config configures a simulated device. The zero value is usable: every
// empty field gets the default documented next to it.
type Config struct {
	// Hostname is the device name shown in prompts; default "edge-r1".
	Hostname string
	// Username and Password are the login credentials; default "admin" /
	// "termhost". With an empty Username (and NoLogin unset) they still
	// default; set NoLogin to skip the login dialogue altogether. The
	// enable password is the same Password.
	Username, Password string
	// EnableSecret is the password of "enable" (IOS, NX-OS, EOS, FRR) and
	// of "su -" (Linux); default: Password.
	EnableSecret string
	// NoLogin skips "User Access Verification": the session starts at the
	// user prompt right after the banner.
	NoLogin bool
	// Banner is printed at connect, before the login dialogue. "\n" is
	// sent as CR LF. Default: a short MOTD box with ANSI colour.
	Banner string
	// NoBanner suppresses the banner.
	NoBanner bool
	// NoColor turns off ANSI colour in generated output (the default
	// banner and status words). A custom Banner is sent as given.
	NoColor bool
	// EOR offers WILL EOR (option 25). When the client agrees (DO EOR)
	// every prompt is followed by IAC EOR. Independently of this, when
	// the client did not agree to SGA, prompts are followed by IAC GA.
	EOR bool
	// Fragment, when set, splits every write into pieces, each written
	// with its own Write call (tests use it to cut IAC sequences anywhere).
	Fragment func(p []byte) [][]byte
	// FragmentDelay is slept between the pieces of one write so that they
	// arrive as separate reads.
	FragmentDelay time.Duration
	// PageLines is the number of lines per page before the pager prompt
	// (" --More-- "); default 20. A negative value disables paging
	// ("terminal length 0" does the same for one connection).
	PageLines int
	// LogBuffer is the number of messages "show logging" prints after its
	// header; default 200 (about ten pages). Tests of the pager bound set
	// it huge: the lines are made as they are sent.
	LogBuffer int
	// EndlessCommand, when set, is a command line (as typed, e.g. "show
	// endless") that every personality with a pager answers with numbered
	// lines without end, through its pager: a device that pages forever
	// (tests of the pager bound). Lines are 18 to 150 characters, so an
	// FRR device (pages in rows of the window's width) also cuts lines.
	EndlessCommand string
	// Personality selects the vendor CLI the device imitates: "cisco_ios"
	// (the default), "cisco_nxos", "juniper_junos", "arista_eos", "huawei",
	// "mikrotik_routeros", "frr" or "linux" (see Personalities and doc.go).
	Personality string
	// Dialect is the older name of Personality ("ios" = "cisco_ios"); used
	// when Personality is empty.
	Dialect string
	// IdleTimeout closes a connection with no input for this long;
	// default 10 minutes.
	IdleTimeout time.Duration
	// NegotiationTimeout bounds how long the server waits for the client
	// to answer its opening option requests before sending the banner;
	// default 1s. Clients that answer promptly never wait that long.
	NegotiationTimeout time.Duration
	// Clock, when set, is the device clock ("show clock", uptime, log
	// timestamps). By default the clock starts at a fixed instant
	// (2025-06-02 09:30:00 UTC) when Listen is called and runs in real
	// time from there.
	Clock func() time.Time
	// Logf, when set, receives a line per connection event.
	Logf func(format string, args ...any)
}

// DefaultClockStart is the instant the default device clock shows at Listen.
var DefaultClockStart = time.Date(2025, time.June, 2, 9, 30, 0, 0, time.UTC)

const defaultUptime = 12*7*24*time.Hour + 3*24*time.Hour + 4*time.Hour + 17*time.Minute

// SessionInfo describes one live connection, as seen by the server. It is
// meant for tests that check what a client negotiated.
type SessionInfo struct {
	ID         int    // connection number, 1 for the first accepted
	Line       int    // vty number shown by "show users"
	RemoteAddr string // client address
	// TermType is the client's first TTYPE IS answer ("" if none yet).
	TermType string
	// Width and Height are the latest NAWS values (0 if none yet);
	// NAWSUpdates counts the NAWS subnegotiations received.
	Width, Height int
	NAWSUpdates   int
	// Env holds the variables of NEW-ENVIRON IS/INFO answers.
	Env map[string]string
	// Local lists the options the server has enabled (the client said DO
	// to our WILL): some of "ECHO", "SGA", "EOR". Remote lists the options
	// the client has enabled (it said WILL to our DO): some of "TTYPE",
	// "NAWS", "NEW-ENVIRON", "SGA". Both sorted.
	Local, Remote []string
	// Counts of IAC commands received.
	IP, BRK, AYT, AO int
	// NegReceived counts WILL/WONT/DO/DONT received, NegSent the ones the
	// server sent. A negotiation loop shows up as ever-growing numbers.
	NegReceived, NegSent int
	User                 string // logged-in user ("" before login)
	LoggedIn             bool
	Privileged           bool // in enable mode
}

// Server is a running simulated device. Each accepted connection is an
// independent CLI session; all sessions share the device state (hostname,
// interface configuration).
type Server struct {
	cfg Config
	pf  *profile
	l   net.Listener

	start time.Time
	done  chan struct{}
	wg    sync.WaitGroup

	mu     sync.Mutex // protects conns, nextID, closed and dev
	conns  map[*conn]struct{}
	nextID int
	closed bool
	dev    device

	closeOnce sync.Once
}

// Listen starts a simulated device on addr, which must be a loopback
// address such as "127.0.0.1:0" or "[::1]:2323" ("localhost:0" is accepted
// as well). The simulator has a fixed password and no rate limiting, so it
// refuses to listen anywhere else.
func Listen(addr string, cfg Config) (*Server, error) {
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	cfg = withDefaults(cfg)
	mk, ok := profiles[strings.ToLower(cfg.Personality)]
	if !ok {
		return nil, fmt.Errorf("devsim: unknown personality %q (known: %s)", cfg.Personality, strings.Join(Personalities, ", "))
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("devsim: %w", err)
	}
	if ta, ok := l.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		l.Close()
		return nil, fmt.Errorf("devsim: %s resolved to non-loopback %s", addr, l.Addr())
	}
	s := &Server{
		cfg:   cfg,
		pf:    mk(),
		l:     l,
		start: time.Now(),
		done:  make(chan struct{}),
		conns: make(map[*conn]struct{}),
		dev:   newDeviceFor(cfg.Personality, cfg.Hostname),
	}
	s.wg.Add(1)
	go s.acceptLoop()
	s.logf("devsim: %s listening on %s", cfg.Hostname, l.Addr())
	return s, nil
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("devsim: bad address %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("devsim: refusing to listen on %q: only loopback addresses (127.0.0.0/8, ::1, localhost) are allowed", addr)
	}
	return nil
}

func withDefaults(cfg Config) Config {
	if cfg.Hostname == "" {
		cfg.Hostname = "edge-r1"
	}
	if cfg.Username == "" {
		cfg.Username = "admin"
	}
	if cfg.Password == "" {
		cfg.Password = "termhost"
	}
	if cfg.EnableSecret == "" {
		cfg.EnableSecret = cfg.Password
	}
	if cfg.Personality == "" {
		cfg.Personality = cfg.Dialect
	}
	cfg.Personality = strings.ToLower(cfg.Personality)
	if cfg.Personality == "" || cfg.Personality == "ios" {
		cfg.Personality = "cisco_ios"
	}
	if cfg.PageLines == 0 {
		cfg.PageLines = 20
	}
	if cfg.PageLines < 0 {
		cfg.PageLines = 0
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 10 * time.Minute
	}
	if cfg.NegotiationTimeout <= 0 {
		cfg.NegotiationTimeout = time.Second
	}
	return cfg
}

// Addr returns the listening address, e.g. "127.0.0.1:40123".
func (s *Server) Addr() string { return s.l.Addr().String() }

// Close stops accepting, closes every live connection and waits until all
// of the server's goroutines have ended. It is safe to call more than once.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.done)
		err = s.l.Close()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
		s.logf("devsim: %s closed", s.cfg.Hostname)
	})
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Sessions returns a snapshot of every live connection, ordered by ID.
func (s *Server) Sessions() []SessionInfo {
	s.mu.Lock()
	cs := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	out := make([]SessionInfo, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.snapshot())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Hostname returns the device's current hostname (it changes with the
// "hostname" configuration command).
func (s *Server) Hostname() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dev.hostname
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

func (s *Server) now() time.Time {
	if s.cfg.Clock != nil {
		return s.cfg.Clock()
	}
	return DefaultClockStart.Add(time.Since(s.start))
}

func (s *Server) uptime() time.Duration {
	if s.cfg.Clock != nil {
		return defaultUptime + s.cfg.Clock().Sub(DefaultClockStart)
	}
	return defaultUptime + time.Since(s.start)
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	var backoff time.Duration
	for {
		nc, err := s.l.Accept()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Transient error (EMFILE, ...): back off a little.
			if backoff == 0 {
				backoff = 5 * time.Millisecond
			} else if backoff < time.Second {
				backoff *= 2
			}
			s.logf("devsim: accept: %v; retrying in %v", err, backoff)
			select {
			case <-time.After(backoff):
			case <-s.done:
				return
			}
			continue
		}
		backoff = 0
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.nextID++
		c := newConn(s, nc, s.nextID)
		s.conns[c] = struct{}{}
		s.wg.Add(2) // session goroutine + reader goroutine
		s.mu.Unlock()
		go c.serve()
	}
}

func (s *Server) remove(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// liveConns returns the live connections ordered by ID.
func (s *Server) liveConns() []*conn {
	s.mu.Lock()
	cs := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	sort.Slice(cs, func(i, j int) bool { return cs[i].id < cs[j].id })
	return cs
}
