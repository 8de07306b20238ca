package plugin

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// readFile reads a plugin file from the plugin directory, refusing
// anything that is not a regular file (a FIFO would block the reader for
// ever, a device such as /dev/zero never ends), is larger than
// Config.MaxFileMiB, or that group or others may write (or another user
// owns), before reading it: the file is opened without blocking and
// checked on the open descriptor, so it cannot be swapped for something
// else between the check and the read. Nothing is read while the plugin
// directory itself is writable by group or others.
func (r *Registry) readFile(path string) ([]byte, error) {
	if r.dir != "" {
		if err := checkDir(r.dir); err != nil {
			return nil, err
		}
	}
	limit := r.cfg.MaxFileMiB << 20
	st, err := os.Stat(path) // follows symlinks: a link to a plugin is fine
	if err != nil {
		return nil, err
	}
	if err := checkFile(st, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := checkFile(st, limit); err != nil {
		return nil, err
	}
	if err := checkWritable(path, st); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("the file grew past %d MiB while it was read", limit>>20)
	}
	return data, nil
}

func checkFile(st os.FileInfo, limit int64) error {
	if !st.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s): only regular .wasm files are loaded", describeMode(st.Mode()))
	}
	if st.Size() > limit {
		return fmt.Errorf("%d bytes is larger than the %d MiB a plugin file may be", st.Size(), limit>>20)
	}
	return nil
}

func describeMode(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}
