package mcp

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/termhost/termhost/host/link"
	"github.com/termhost/termhost/host/secrets"
	"github.com/termhost/termhost/host/session"
)

// Where ask_secret may type (issue 33): only where the person can see the
// secret goes. The agent chose the session, so it could otherwise have
// the person's secret land where it reads it (a shell's read -s that
// prints it base64, a listener of its own, a copy of the terminal to a
// file). Two kinds of place pass:
//
//   - a local PTY whose whole foreground process group runs programs of
//     the server's --ask-programs (compared by the real executable,
//     /proc/PID/exe, as send_secret compares a credential's "programs"),
//     with no process outside the terminal's session holding it, none of
//     them traced or run with the dynamic loader told to load other code,
//     the group's leader blocked reading the terminal right now (else what
//     is typed waits there for whichever program reads next: the shell
//     after it), echo off, and no TCP connection of theirs to a listener
//     one of the server's sessions started;
//   - a Telnet or SSH session whose destination the page shows (the host
//     and port it was opened to, the address it is connected to and, when
//     that address is this machine, the process that holds it), which the
//     person confirms; never one connected to a listener that a program of
//     one of the server's sessions holds, nor to an address of this
//     machine whose holder cannot be told apart from such a program.
//
// The checks run before the page is made (the agent gets the refusal),
// when the page is shown, and again just before the secret is typed,
// which must then go to the very processes (or destination) the page
// showed.

// DefaultAskPrograms are the programs ask_secret types into by default:
// the usual ones that ask a person for a password on their terminal.
var DefaultAskPrograms = []string{"sudo", "su", "doas", "ssh", "ssh-add", "passwd", "gpg", "kinit"}

// askPrograms is the allow-list, resolved once at start.
type askPrograms struct {
	paths map[string]bool // real executables
	named string          // the list as configured, for messages
	// writable are the programs of the list this user can replace (the
	// file or a directory above it): a name looked up in PATH that
	// resolves to one is left out (the agent, with this user's rights,
	// could have put it there); a path named is kept, with a warning.
	writable []string
}

// resolveAskPrograms resolves names (looked up in PATH) and paths to
// real executables; one that is not there is left out.
func resolveAskPrograms(names []string) askPrograms {
	a := askPrograms{paths: map[string]bool{}}
	var shown []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		shown = append(shown, n)
		p := secrets.ResolveProgram(n)
		if p == "" {
			continue
		}
		if userWritable(p) {
			if !strings.Contains(n, "/") {
				a.writable = append(a.writable, p+" (left out)")
				continue
			}
			a.writable = append(a.writable, p)
		}
		a.paths[p] = true
	}
	a.named = strings.Join(shown, ", ")
	if a.named == "" {
		a.named = "none"
	}
	return a
}

// userWritable reports whether this user (not root, who can write
// anything) can replace the file at p: write it, or change a directory
// above it.
func userWritable(p string) bool {
	if os.Geteuid() == 0 {
		return false
	}
	for d := p; ; d = filepath.Dir(d) {
		if unix.Access(d, unix.W_OK) == nil {
			return true
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}

// askProc is one process of a terminal's foreground group.
type askProc struct {
	pid   int
	start uint64 // its start time: with pid, the process itself
	exe   string
	args  string // its command line, for the page
}

// askDest is where a page's secret would go, as the page shows it. For a
// PTY: the processes of the foreground group; for Telnet and SSH: the
// destination and, on this machine, who holds it.
type askDest struct {
	kind   session.Kind
	pgid   int
	procs  []askProc
	host   string
	port   int
	remote netip.Addr
	local  bool   // remote is an address of this machine
	holder string // who holds the peer's end there, when told
}

func (d askDest) network() bool { return d.kind == session.KindTelnet || d.kind == session.KindSSH }

// same reports whether o is the destination d was: the same processes
// (pid and start time), or the same connection.
func (d askDest) same(o askDest) bool {
	if d.kind != o.kind || d.pgid != o.pgid || d.host != o.host || d.port != o.port || d.remote != o.remote || len(d.procs) != len(o.procs) {
		return false
	}
	for i := range d.procs {
		if d.procs[i].pid != o.procs[i].pid || d.procs[i].start != o.procs[i].start || d.procs[i].exe != o.procs[i].exe {
			return false
		}
	}
	return true
}

// lines describe the destination to the person.
func (d askDest) lines() []string {
	if d.network() {
		out := []string{fmt.Sprintf("%s session to %s, port %d, connected to %s.", kindName(d.kind), d.host, d.port, d.remote)}
		switch {
		case d.local && d.holder != "":
			out = append(out, "That address is this machine: "+d.holder+".")
		case d.local:
			out = append(out, "That address is this machine.")
		default:
			out = append(out, "That address is another machine: whatever reads there gets what you type.")
		}
		return out
	}
	var out []string
	for _, p := range d.procs {
		out = append(out, fmt.Sprintf("%s (pid %d), reading its terminal with echo off: %s", p.exe, p.pid, p.args))
	}
	return out
}

// askRefusal is why a secret may not go where a session's input goes.
type askRefusal struct{ msg string }

func (e *askRefusal) Error() string { return e.msg }

func refusef(format string, args ...any) error {
	return &askRefusal{msg: fmt.Sprintf(format, args...)}
}

// askDestination is where typing into sess goes now, and an error when
// the person's secret may not go there. What could be told is filled in
// even then.
func (s *Server) askDestination(sess *session.Session) (askDest, error) {
	d := sess.Destination()
	if d.Foreground != nil || d.FgErr != nil {
		return s.askPTY(sess, d)
	}
	if d.Kind == session.KindTelnet || d.Kind == session.KindSSH {
		return askNetwork(sess, d)
	}
	return askDest{kind: d.Kind}, refusef("session %s is a %s session: ask_secret types only into a local program that asks for a password or a Telnet/SSH session", sess.ID, d.Kind)
}

// askPTY checks a local PTY's foreground group (see the top of the file).
func (s *Server) askPTY(sess *session.Session, d session.Destination) (askDest, error) {
	dest := askDest{kind: d.Kind}
	progs := s.askPrograms()
	only := fmt.Sprintf("ask_secret types into a local program only while one of --ask-programs (%s) reads its terminal with echo off; session %s", progs.named, sess.ID)
	if d.FgErr != nil {
		return dest, refusef("%s: its foreground program cannot be told (%v)", only, d.FgErr)
	}
	if len(progs.paths) == 0 {
		return dest, refusef("this server types the person's secrets into no local program (--ask-programs names none that is installed: %s); session %s is a terminal", progs.named, sess.ID)
	}
	fg := d.Foreground
	dest.pgid = fg.Pgid
	procs := groupProcs(fg.Pgid)
	dest.procs = procs
	if len(procs) == 0 {
		return dest, refusef("%s: its foreground process group %d is gone", only, fg.Pgid)
	}
	// This view of the group, and the engine's, process by process.
	var others []string
	for _, p := range procs {
		if !progs.paths[p.exe] {
			others = append(others, fmt.Sprintf("%s (pid %d)", exeName(p.exe), p.pid))
		}
	}
	for _, exe := range fg.Exes {
		if !progs.paths[exe] && len(others) == 0 {
			others = append(others, exeName(exe))
		}
	}
	if len(others) > 0 {
		return dest, refusef("%s runs %s, not among them", only, strings.Join(others, ", "))
	}
	if len(fg.Outsiders) > 0 {
		return dest, refusef("%s: its terminal is also open in %s, outside the session, which could read the secret", only, strings.Join(fg.Outsiders, ", "))
	}
	for _, p := range procs {
		if tracer := tracerOf(p.pid); tracer > 0 {
			return dest, refusef("%s: %s (pid %d) is traced by pid %d (%s), which sees everything it reads", only, p.exe, p.pid, tracer, exeName(exeOf(tracer)))
		}
		if v := loaderVar(p.pid); v != "" {
			return dest, refusef("%s: %s (pid %d) runs with %s set: code that is not the program's own reads what it reads", only, p.exe, p.pid, v)
		}
	}
	if a, ok := awaitReading(sess, fg.Pgid); !ok || a.Pgid != fg.Pgid || a.State != link.InputWaiting {
		state := "it cannot be told"
		if ok && a.Pgid == fg.Pgid {
			state = "it is " + a.State.String()
		}
		return dest, refusef("%s: %s (pid %d) is not reading the terminal now (%s): what is typed would wait there for whichever program reads next", only, procs[0].exe, procs[0].pid, state)
	}
	if on, err := ttyEchoes(fg.Pgid); err == nil && on {
		return dest, refusef("%s: its terminal would show what is typed (echo on, or keys read one by one)", only)
	}
	// A program of the list sends what it reads where it is connected:
	// never to a listener of the agent's.
	if tab, err := readTCP(); err == nil {
		for _, p := range procs {
			for _, ino := range socketsOf(p.pid) {
				e, ok := tab.byInode[ino]
				if !ok || e.state != tcpEstablished || !isLocalAddr(e.remote.Addr()) {
					continue
				}
				if _, err := tab.localHolder(e.remote, e.local); err != nil {
					return dest, refusef("%s: %s (pid %d) is connected to %s, and %v", only, p.exe, p.pid, e.remote, err)
				}
			}
		}
	}
	return dest, nil
}

// readingGrace is how long a foreground group's leader is given to start
// reading the terminal: a program that has just printed its prompt may
// not be in its read yet.
const readingGrace = time.Second

// awaitReading waits (at most readingGrace) until the leader of process
// group pgid is reading sess's terminal; it returns what it saw last.
func awaitReading(sess *session.Session, pgid int) (link.Awaiting, bool) {
	deadline := time.Now().Add(readingGrace)
	for {
		a, ok := sess.Awaiting()
		if !ok || a.Pgid != pgid || a.State == link.InputWaiting || a.State == link.InputGone || time.Now().After(deadline) {
			return a, ok
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// askNetwork checks a Telnet or SSH session's destination.
func askNetwork(sess *session.Session, d session.Destination) (askDest, error) {
	dest := askDest{kind: d.Kind, host: d.Host, port: d.Port, remote: d.Remote}
	if d.Host == "" || !d.Remote.IsValid() {
		return dest, refusef("session %s: the address its %s connection goes to cannot be told, so the person could not see where the secret goes", sess.ID, kindName(d.Kind))
	}
	if dest.local = isLocalAddr(d.Remote); !dest.local {
		return dest, nil
	}
	tab, err := readTCP()
	if err != nil {
		return dest, refusef("session %s is connected to %s on this machine, and who listens there cannot be told (%v)", sess.ID, d.Remote, err)
	}
	who, err := tab.localHolder(netip.AddrPortFrom(d.Remote, uint16(d.Port)), netip.AddrPort{})
	if err != nil {
		return dest, refusef("session %s is connected to %s, port %d, on this machine, and %v", sess.ID, d.Remote, d.Port, err)
	}
	dest.holder = who
	return dest, nil
}

// shown is text of the agent's or a program's as the page shows it:
// control and bidirectional-formatting characters, which could make it
// read as something else, replaced.
func shown(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029' {
			return '\uFFFD'
		}
		return r
	}, s)
}

// notOneLine says why what the person submitted is not a secret termhost
// types: a secret is one line of text, so a line end (which would submit
// what follows as another line: a command) or any other control
// character is refused, as is what is not UTF-8. "" when it is one.
func notOneLine(s string) string {
	if !utf8.ValidString(s) {
		return "a secret is one line of text, and this is not valid UTF-8"
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			what := "a control character"
			if r == '\r' || r == '\n' || r == 0x85 {
				what = "a line break"
			}
			return fmt.Sprintf("a secret is one line of text, and this has %s in it (%U)", what, r)
		}
	}
	return ""
}
