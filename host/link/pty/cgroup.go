package pty

// The session cgroups of the cgroup containment path (contain.go): one
// cgroup v2 per session under termhost's own parent cgroup
// (termhost-<pid>), ended by cgroup.kill.

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// cgroup is one session's cgroup.
type cgroup struct {
	dir  string
	fd   int // open directory, for CLONE_INTO_CGROUP; -1 once closed
	once sync.Once
}

func (c *Containment) newCgroup() (*cgroup, error) {
	dir := filepath.Join(c.cgroupDir, "s"+strconv.FormatUint(c.seq.Add(1), 10))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return nil, err
	}
	return &cgroup{dir: dir, fd: fd}, nil
}

func (g *cgroup) closeFD() {
	if g.fd >= 0 {
		unix.Close(g.fd)
		g.fd = -1
	}
}

func (g *cgroup) close() {
	g.closeFD()
	g.remove()
}

// kill ends every process in the cgroup.
func (g *cgroup) kill() {
	if g != nil {
		os.WriteFile(g.dir+"/cgroup.kill", []byte("1"), 0)
	}
}

// remove kills what is left and removes the cgroup once it is empty
// (bounded: a cgroup that will not empty is left, and found by the next
// start's removeStale if termhost's pid is gone by then).
func (g *cgroup) remove() {
	if g == nil {
		return
	}
	g.once.Do(func() {
		g.kill()
		for i := 0; i < 250; i++ {
			if err := os.Remove(g.dir); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted.
func cgroup2Mount() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		// id parent major:minor root mountpoint options… - fstype source …
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) >= 5 && len(g) >= 1 && g[0] == "cgroup2" {
			return unescapeMount(f[4]), nil
		}
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroup is termhost's cgroup v2 path ("0::/path").
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("termhost is in no cgroup v2 (no 0:: line in /proc/self/cgroup)")
}

// removeStale removes the parent cgroups of termhost processes that died
// without removing theirs (SIGKILL), once they are empty.
func removeStale(base string) {
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		pidStr, ok := strings.CutPrefix(e.Name(), "termhost-")
		if !ok || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(pidStr)
		if err != nil || (pid != os.Getpid() && unix.Kill(pid, 0) == nil) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		subs, _ := os.ReadDir(dir)
		for _, s := range subs {
			if s.IsDir() {
				os.Remove(filepath.Join(dir, s.Name()))
			}
		}
		os.Remove(dir)
	}
}
