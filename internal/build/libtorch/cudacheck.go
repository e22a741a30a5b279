package libtorch

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
)

// gpuVisible reports whether this machine shows an NVIDIA GPU to its processes (the driver's control device).
// A CUDA libtorch is often set up where no GPU is, to build an image; there the device step is not run.
var gpuVisible = func() bool { return exists("/dev/nvidiactl") }

// CheckCUDABuild is the set-up's last step for a CUDA libtorch: it links convrep as every command is linked, and
// where a GPU is visible runs one tiny CUDA step through the shim (`convrep device`: an op and a graph capture).
// A library the link lacks, or one the loader cannot find at run time, then stops the set-up with its name,
// not the first training run.
func CheckCUDABuild(root string) error {
	dir, err := os.MkdirTemp("", "convrep-setup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "convrep")
	fmt.Println("setup: linking convrep against this CUDA libtorch")
	if out, err := tee(root, "go", "build", "-o", bin, "./cmd/convrep"); err != nil {
		return fmt.Errorf("convrep does not link against libtorch's CUDA libraries: %w%s", err, linkHint(out))
	}
	if !gpuVisible() {
		fmt.Println("setup: no GPU is visible here (no /dev/nvidiactl): convrep links, the CUDA step is left to `convrep device` on a GPU host")
		return nil
	}
	if out, err := tee(root, bin, "device", "--device", "cuda"); err != nil {
		return fmt.Errorf("one CUDA step through the shim (convrep device) failed: %w%s", err, linkHint(out))
	}
	return nil
}

// tee runs a command in dir with its output on this process's standard output and returns that output too.
func tee(dir, name string, args ...string) ([]byte, error) {
	var buf bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdout = io.MultiWriter(os.Stdout, &buf)
	cmd.Stderr = io.MultiWriter(os.Stderr, &buf)
	err := cmd.Run()
	return buf.Bytes(), err
}

var (
	// ld: "undefined reference to symbol 'cudaStreamWaitEvent@@libcudart.so.13'"
	missingDSORe = regexp.MustCompile(`undefined reference to symbol '([^'@]+)@@?([^']+)'`)
	// ld.so: "error while loading shared libraries: libcudart.so.13: cannot open shared object file"
	notLoadedRe = regexp.MustCompile(`error while loading shared libraries: ([^:]+): cannot open shared object file`)
)

// linkHint reads a failed link's or start's output for the library at fault and says what it means; "" when
// it names none.
func linkHint(out []byte) string {
	if m := missingDSORe.FindSubmatch(out); m != nil {
		return fmt.Sprintf(": the shim calls %s of %s, which the set-up did not put on the link line; "+
			"report this with the set-up's output (its \"links\" line names the CUDA libraries it found)", m[1], m[2])
	}
	if m := notLoadedRe.FindSubmatch(out); m != nil {
		return fmt.Sprintf(": the dynamic loader does not find %s at run time; add its folder to LD_LIBRARY_PATH, "+
			"or set CUDA_HOME to the toolkit that holds it and run the set-up again", m[1])
	}
	return ""
}
