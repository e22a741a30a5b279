// Package rundir owns a training run's output folder: its layout (Run: the model folder, the checkpoints and
// their steps, the metrics and plot files) and its lock, one `convrep train` per folder at a time.
package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// LockName is the lock file's name inside a run folder.
const LockName = ".convrep.lock"

// HeldEnv names, in a data-parallel worker's environment, the run folder whose lock the launcher holds for the
// whole job (convrep train --nproc-per-node): the workers share it instead of taking it.
const HeldEnv = "CONVREP_RUN_LOCK_HELD"

// Holder is who holds a run folder's lock, as its lock file states.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
}

func (h Holder) String() string {
	return fmt.Sprintf("pid %d on %s, started %s", h.PID, h.Host, h.Started.Local().Format("2006-01-02 15:04:05"))
}

// Lock is a held run-folder lock: an exclusive flock on the folder's lock file, which the kernel releases when
// the process ends, however it ends (a SIGKILLed run does not block the next).
type Lock struct {
	f *os.File
}

// ErrBusy is the error of a folder another process holds; errors.Is finds it in Acquire's error.
var ErrBusy = errors.New("the run folder is in use")

// Acquire takes dir's lock without waiting, making the folder when missing, and writes this process into the
// lock file. When another process holds it, the error names the folder and the holder.
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("output folder: %w", err)
	}
	path := filepath.Join(dir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("output folder: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is being written by another convrep train (%s; lock file %s): wait for it to end, "+
				"or give this run another output_dir", ErrBusy, dir, describeHolder(f), path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	host, _ := os.Hostname()
	b, _ := json.Marshal(Holder{PID: os.Getpid(), Host: host, Started: time.Now().UTC().Truncate(time.Second)})
	if err = f.Truncate(0); err == nil {
		_, err = f.WriteAt(append(b, '\n'), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// describeHolder reads the holder from a lock file, read in a bounded amount.
func describeHolder(f *os.File) string {
	b := make([]byte, 4096)
	n, _ := f.ReadAt(b, 0)
	var h Holder
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(b[:n]))), &h); err != nil || h.PID == 0 {
		return "a process that has not written its details yet"
	}
	return h.String()
}

// Release gives the lock up. The file stays: removing it would let a third run lock a new file while a second
// still waits on the old one.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
	return err
}

// Shared reports whether dir's lock is held for this process by its launcher (HeldEnv), as for the workers of
// convrep train --nproc-per-node.
func Shared(dir string) bool {
	held := os.Getenv(HeldEnv)
	if held == "" {
		return false
	}
	a, err1 := filepath.Abs(held)
	b, err2 := filepath.Abs(dir)
	return err1 == nil && err2 == nil && a == b
}
