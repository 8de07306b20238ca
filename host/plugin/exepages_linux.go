package plugin

import (
	"bufio"
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// releaseExePages drops the resident pages of the executable's read-only
// data from this process: the embedded plugins' bytes live there (21 MB),
// and reading them (to hash them, or to compile one) leaves those pages
// counted in the server's resident memory although nothing reads them
// again until the next compile. The pages are clean, private and backed
// by the executable file, which Linux keeps from being written while it
// runs: MADV_DONTNEED only unmaps them, and a later read faults them back
// in from the same file (the page cache, usually). Best effort: any error
// leaves them.
func releaseExePages() {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
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
		unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_DONTNEED)
	}
}
