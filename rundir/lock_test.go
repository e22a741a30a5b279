package rundir

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A second Acquire of a held folder fails at once naming the folder, the holder's pid and the lock file; after
// Release the folder can be taken again.
func TestAcquireTwice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	first, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("second Acquire: %v, want ErrBusy", err)
	}
	for _, w := range []string{dir, fmt.Sprintf("pid %d", os.Getpid()), LockName, "output_dir"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	again, err := Acquire(dir)
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	again.Release()
}

// helperEnv makes the test binary a lock holder (TestHolderProcess) on the folder it names.
const helperEnv = "CONVREP_RUNDIR_TEST_HOLD"

// TestHolderProcess is not a test of its own: run as a child with helperEnv set, it takes the lock, says so on
// standard output and sleeps until killed.
func TestHolderProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("a helper process for TestKilledHolderDoesNotBlock")
	}
	if _, err := Acquire(dir); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("held")
	time.Sleep(time.Minute)
	os.Exit(0)
}

// Another process holds the folder: Acquire fails within a second naming that process's pid and host, and
// writes nothing in the folder. Once the holder is SIGKILLed, the kernel releases its lock and the folder can
// be taken.
func TestKilledHolderDoesNotBlock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHolderProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 64)
	if n, _ := out.Read(buf); !strings.HasPrefix(string(buf[:n]), "held") {
		t.Fatalf("the holder said %q", buf[:n])
	}
	before, _ := os.ReadFile(filepath.Join(dir, LockName))
	start := time.Now()
	_, err = Acquire(dir)
	if took := time.Since(start); took > time.Second {
		t.Errorf("Acquire took %s, want at once", took)
	}
	host, _ := os.Hostname()
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d on %s", cmd.Process.Pid, host)) {
		t.Fatalf("Acquire: %v, want ErrBusy naming pid %d on %s", err, cmd.Process.Pid, host)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, LockName)); string(after) != string(before) {
		t.Errorf("the refused Acquire changed the lock file: %q, was %q", after, before)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	l.Release()
}

// A lock file that holds no holder's details (a holder that has not written them, or garbage) is described as
// such, not as a pid.
func TestDescribeHolderOfAnEmptyFile(t *testing.T) {
	for _, body := range []string{"", "not json", `{"pid":0}`, strings.Repeat("x", 10000)} {
		p := filepath.Join(t.TempDir(), LockName)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := describeHolder(f); !strings.Contains(got, "not written its details") {
			t.Errorf("%q: %q", body, got)
		}
		f.Close()
	}
}

// Workers of a launcher share its lock when HeldEnv names their folder, however it is spelt.
func TestShared(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(HeldEnv, "")
	if Shared(dir) {
		t.Error("shared with no launcher")
	}
	t.Setenv(HeldEnv, dir+"/.")
	if !Shared(dir) || Shared(filepath.Join(dir, "other")) {
		t.Errorf("Shared(%s) = %v, Shared(other) = %v", dir, Shared(dir), Shared(filepath.Join(dir, "other")))
	}
}
