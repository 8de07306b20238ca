package plugin

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// releaseExePages asks the kernel to reclaim the resident pages of the
// executable's read-only data: the embedded plugins' bytes live there (21
// MB), and reading them (to hash them, or to compile one) leaves those
// pages counted in the server's resident memory although nothing reads
// them again until the next compile. MADV_PAGEOUT is only a hint: clean
// file-backed pages are dropped (a later read faults them back in from
// the file), and a page this process changed (the dynamic loader's
// relocations, which a RELRO segment keeps read-only afterwards) is left
// as it is — unlike MADV_DONTNEED, which would throw such a change away
// and with it the data (it did: SSH logins failed in a test run). Linux
// 5.4 or later; elsewhere, or on any error, the pages stay.
func releaseExePages() {
	for _, r := range exeReadOnly() {
		unix.Syscall(unix.SYS_MADVISE, r[0], r[1]-r[0], unix.MADV_PAGEOUT)
	}
}

// exeReadOnly is the executable's read-only mappings (start, end), read
// from /proc/self/maps once: they do not move while the process runs.
var exeReadOnly = sync.OnceValue(func() [][2]uintptr {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	var spans [][2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// start-end perms offset dev inode path
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 6 || string(fields[1]) != "r--p" || string(fields[5]) != exe {
			continue
		}
		span := bytes.SplitN(fields[0], []byte("-"), 2)
		if len(span) != 2 {
			continue
		}
		start, err1 := strconv.ParseUint(string(span[0]), 16, 64)
		end, err2 := strconv.ParseUint(string(span[1]), 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		spans = append(spans, [2]uintptr{uintptr(start), uintptr(end)})
	}
	return spans
})
