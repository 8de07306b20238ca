//go:build unix

package devsim

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"time"
)

// Inetd is a minimal inetd for interoperability tests against real
// inetd-style daemons (GNU inetutils telnetd only runs that way): for each
// accepted connection it starts a program with the socket as its standard
// input and output, like inetd's "nowait" mode.
type Inetd struct {
	l    net.Listener
	argv []string
	env  []string

	done chan struct{}
	wg   sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	children map[*exec.Cmd]struct{}
	pids     []int
	log      boundedBuffer

	closeOnce sync.Once
}

// ListenInetd accepts on a loopback address (same rule as Listen) and, per
// connection, starts argv with the accepted socket as its stdin and stdout.
// The children's stderr goes to a bounded log buffer (see Inetd.Log). env
// is the children's environment; nil means the current process's. Each
// child runs in its own process group so that Close can kill it together
// with whatever it started in that group.
func ListenInetd(addr string, argv []string, env []string) (*Inetd, error) {
	if len(argv) == 0 {
		return nil, errors.New("devsim: ListenInetd: empty argv")
	}
	if err := checkLoopback(addr); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return nil, fmt.Errorf("devsim: ListenInetd: %w", err)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("devsim: %w", err)
	}
	d := &Inetd{
		l:        l,
		argv:     append([]string(nil), argv...),
		env:      env,
		done:     make(chan struct{}),
		children: make(map[*exec.Cmd]struct{}),
	}
	d.log.max = 64 << 10
	d.wg.Add(1)
	go d.acceptLoop()
	return d, nil
}

// Addr returns the listening address.
func (d *Inetd) Addr() string { return d.l.Addr().String() }

// PIDs returns the process IDs of all children started so far, including
// those that have exited.
func (d *Inetd) PIDs() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]int(nil), d.pids...)
}

// Running returns the process IDs of the children still running.
func (d *Inetd) Running() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []int
	for c := range d.children {
		out = append(out, c.Process.Pid)
	}
	sort.Ints(out)
	return out
}

// Log returns the children's stderr output and start/exit notes (the most
// recent 64 KiB).
func (d *Inetd) Log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// Close stops accepting, kills every child's process group and waits for
// the children to be reaped.
func (d *Inetd) Close() error {
	var err error
	d.closeOnce.Do(func() {
		d.mu.Lock()
		d.closed = true
		close(d.done)
		err = d.l.Close()
		for c := range d.children {
			syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
		d.mu.Unlock()
		d.wg.Wait()
	})
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (d *Inetd) acceptLoop() {
	defer d.wg.Done()
	for {
		nc, err := d.l.Accept()
		if err != nil {
			select {
			case <-d.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-time.After(10 * time.Millisecond):
			case <-d.done:
				return
			}
			continue
		}
		d.spawn(nc)
	}
}

func (d *Inetd) spawn(nc net.Conn) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		nc.Close()
		return
	}
	remote := nc.RemoteAddr()
	f, err := tc.File() // a dup of the socket, in blocking mode
	nc.Close()
	if err != nil {
		d.note("inetd: %v\n", err)
		return
	}
	defer f.Close() // the child has its own copy once started

	cmd := exec.Command(d.argv[0], d.argv[1:]...)
	cmd.Stdin = f
	cmd.Stdout = f
	cmd.Stderr = &lockedWriter{d: d}
	cmd.Env = d.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second

	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return
	}
	if err := cmd.Start(); err != nil {
		d.log.WriteString(fmt.Sprintf("inetd: start %s: %v\n", d.argv[0], err))
		return
	}
	d.children[cmd] = struct{}{}
	d.pids = append(d.pids, cmd.Process.Pid)
	d.log.WriteString(fmt.Sprintf("inetd: started %s pid %d for %s\n", d.argv[0], cmd.Process.Pid, remote))
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		err := cmd.Wait()
		// Whatever the child left behind in its process group goes too.
		// (The group ID cannot be reused while members remain.)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		d.mu.Lock()
		delete(d.children, cmd)
		d.log.WriteString(fmt.Sprintf("inetd: pid %d exited: %v\n", cmd.Process.Pid, exitText(err)))
		d.mu.Unlock()
	}()
}

func exitText(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

func (d *Inetd) note(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.log.WriteString(fmt.Sprintf(format, args...))
}

// lockedWriter appends a child's stderr to the Inetd log.
type lockedWriter struct{ d *Inetd }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	w.d.log.Write(p)
	return len(p), nil
}

// boundedBuffer keeps the last max bytes written to it.
type boundedBuffer struct {
	max int
	b   []byte
}

func (b *boundedBuffer) Write(p []byte) {
	b.b = append(b.b, p...)
	if over := len(b.b) - b.max; over > 0 {
		b.b = append(b.b[:0], b.b[over:]...)
	}
}

func (b *boundedBuffer) WriteString(s string) { b.Write([]byte(s)) }

func (b *boundedBuffer) String() string { return string(b.b) }
