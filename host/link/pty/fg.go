package pty

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/termhost/termhost/host/link"
)

// Foreground is who reads what is typed into the terminal (link.Foreground).
type Foreground = link.Foreground

// maxProcScan bounds the processes looked at.
const maxProcScan = 1 << 16

// Foreground reports who reads the terminal's input now. It reads /proc,
// so it says nothing where /proc is not Linux's.
func (p *PTY) Foreground() (Foreground, error) {
	var fg Foreground
	var pgid, sid int
	var ptn uint32
	var ierr error
	rc, err := p.f.SyscallConn()
	if err != nil {
		return fg, err
	}
	if err := rc.Control(func(fd uintptr) {
		if pgid, ierr = unix.IoctlGetInt(int(fd), unix.TIOCGPGRP); ierr != nil {
			return
		}
		if sid, ierr = unix.IoctlGetInt(int(fd), unix.TIOCGSID); ierr != nil {
			return
		}
		ptn, ierr = unix.IoctlGetUint32(int(fd), unix.TIOCGPTN)
	}); err != nil {
		return fg, err
	}
	if ierr != nil {
		return fg, fmt.Errorf("the terminal's foreground process group: %w", ierr)
	}
	fg.Pgid = pgid
	slave := "/dev/pts/" + strconv.FormatUint(uint64(ptn), 10)
	dir, err := os.Open("/proc")
	if err != nil {
		return fg, err
	}
	defer dir.Close()
	names, err := dir.Readdirnames(maxProcScan)
	if err != nil {
		return fg, err
	}
	self := os.Getpid()
	leader := ""
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == self {
			continue
		}
		st, ok := readProcStat(pid)
		if !ok {
			continue
		}
		switch {
		case st.pgrp == pgid:
			exe, _ := os.Readlink("/proc/" + n + "/exe")
			if pid == pgid {
				leader = exe
			} else {
				fg.Exes = append(fg.Exes, exe)
			}
		case st.sid != sid && holds(pid, slave):
			exe, _ := os.Readlink("/proc/" + n + "/exe")
			fg.Outsiders = append(fg.Outsiders, fmt.Sprintf("%d (%s)", pid, exe))
		}
	}
	fg.Exes = append([]string{leader}, fg.Exes...)
	return fg, nil
}

// holds reports whether a process has the terminal open.
func holds(pid int, slave string) bool {
	d := "/proc/" + strconv.Itoa(pid) + "/fd/"
	f, err := os.Open(d)
	if err != nil {
		return false
	}
	defer f.Close()
	fds, _ := f.Readdirnames(4096)
	for _, fd := range fds {
		if l, err := os.Readlink(d + fd); err == nil && l == slave {
			return true
		}
	}
	return false
}
