package plugin

import (
	"embed"
	"fmt"
	"os"
	"syscall"
	"time"
)

// The sha256 of each embedded plugin is known before any is compiled (it
// names the version, its pins, its record of a passed canary and its
// compiled files in the cache), but hashing them reads 21 MB of the
// binary, which then stays resident as the file's pages: more than half
// of what an idle server holds otherwise. So the sums are kept in the
// cache's index, under the identity of the executable file they were
// read from (binaryRecord), and read from the binary only when the index
// does not have them. Compiling a plugin hashes its bytes again and
// refuses a sum that does not match (version.module).

// binaryRecord is the sums of the plugins embedded in one executable.
type binaryRecord struct {
	Seen time.Time         `json:"seen"`
	Sums map[string]string `json:"sums"` // embedded file → sha256
}

// exeKey identifies the running executable's file, when the embedded
// plugins are the binary's own (an embed.FS, not a test's map): its path,
// size, modification time, device and inode. "" if unknown.
func exeKey(embedded any) string {
	if _, ok := embedded.(embed.FS); !ok {
		return ""
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	st, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	key := fmt.Sprintf("%s|%d|%d", exe, st.Size(), st.ModTime().UnixNano())
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		key += fmt.Sprintf("|%d|%d", s.Dev, s.Ino)
	}
	return key
}

// sum is the recorded sha256 of embedded file name in the executable
// key, or "".
func (idx *cacheIndex) sum(key, name string) string {
	if idx == nil || key == "" {
		return ""
	}
	if b := idx.Binaries[key]; b != nil {
		return b.Sums[name]
	}
	return ""
}

// embeddedSums lists the sums of the embedded plugins known so far.
func (r *Registry) embeddedSums() map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	sums := map[string]string{}
	for _, p := range r.plugins {
		if p.embedded != nil && p.embedded.sha != "" {
			sums[p.embedded.embedded] = p.embedded.sha
		}
	}
	return sums
}
