// Package gotchpatch makes convrep's copy of gotch: gotch v0.9.1 from the module cache, its link flags rewritten for
// the libtorch found here, memory faults of its generated Go code fixed, its tensor handles made cheap
// (patch.go), libtorch calls counted (count.go), and the generated C++ wrappers this libtorch cannot compile
// replaced by stubs that report an error (stubs.go). A stamp records what the copy was made from. It imports
// the standard library and internal/build/libtorch only: the set-up (cmd/setup) builds it before vendor/ exists.
package gotchpatch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"convrep/internal/build/libtorch"
)

const (
	Module  = "github.com/sugarme/gotch"
	Version = "v0.9.1"
	// Level changes whenever these patches change, so that old copies are rebuilt.
	Level = "convrep-setup-16"
	// Dir is the copy's folder in the repository; go.mod points gotch at it with a replace directive.
	Dir       = "third_party/gotch"
	stampFile = ".convrep-stamp"
	// StubList names, one a line, the wrappers the copy stubs (in the copy's folder).
	StubList = "STUBBED.txt"
)

// Make copies gotch's module folder src to dst (through dst+".tmp", so that an interrupted copy is never
// taken for a finished one), patches it for lt and stubs what lt cannot compile. It returns the stubbed
// wrappers' names. The stamp is not written: WriteStamp does that once everything else built.
func Make(src, dst string, lt *libtorch.Libtorch) ([]string, error) {
	tmp := dst + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := copyTree(src, tmp); err != nil {
		return nil, fmt.Errorf("copy gotch: %w", err)
	}
	if err := patchGo(tmp, lt); err != nil {
		return nil, err
	}
	stubbed, err := stubUncompilable(tmp, lt)
	if err != nil {
		return nil, err
	}
	list := strings.Join(stubbed, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(tmp, StubList), []byte(list), 0o644); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dst); err != nil {
		return nil, err
	}
	return stubbed, os.Rename(tmp, dst)
}

// WriteStamp records in dst that the copy was made from what stamp names.
func WriteStamp(dst, stamp string) error {
	return os.WriteFile(filepath.Join(dst, stampFile), []byte(stamp), 0o644)
}

// Source is gotch's folder in the module cache, downloaded when missing.
func Source(root string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", Module+"@"+Version)
	cmd.Dir = os.TempDir() // outside the module, so that the replace directive does not apply
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GO111MODULE=on")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w\n%s", Module, Version, err, out)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("go mod download: %w", err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", Module, Version, info.Error)
	}
	return info.Dir, nil
}

// Stamp names everything the copy depends on: this tool's patches, gotch's source and the libtorch files.
func Stamp(lt *libtorch.Libtorch, src string) string {
	h := sha256.New()
	fmt.Fprintln(h, Level, Version, src, lt.Include, lt.Lib, lt.Version, lt.CUDA, lt.ABI, lt.Std)
	// The shim's NCCL and CUDA headers are found through these (internal/build/libtorch/shim.go).
	fmt.Fprintln(h, os.Getenv("CGO_CPPFLAGS"), os.Getenv("CUDA_HOME"))
	// The CUDA libraries the shim links are the files the loader resolves (internal/build/libtorch/cudalibs.go).
	fmt.Fprintln(h, os.Getenv("LD_LIBRARY_PATH"), lt.CUDALibs)
	if lt.NVRTCDir != "" { // absent before NVRTC, so that the stamps of other builds stay as they were
		fmt.Fprintln(h, "nvrtc", lt.NVRTCDir)
	}
	for _, f := range []string{"libtorch.so", "libtorch_cpu.so", "libc10.so"} {
		if st, err := os.Stat(filepath.Join(lt.Lib, f)); err == nil {
			fmt.Fprintln(h, f, st.Size(), st.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// UpToDate reports whether the copy in dst was made from what stamp names, and completely (the stamp is
// written last).
func UpToDate(dst, stamp string) bool {
	b, err := os.ReadFile(filepath.Join(dst, stampFile))
	return err == nil && string(b) == stamp
}

// BuildOnce compiles gotch's wrappers and the shim into Go's build cache (about two minutes cold on one core).
func BuildOnce(root string) error {
	cmd := exec.Command("go", "build", "./internal/torch", Module+"/ts", Module+"/nn")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	println("setup: compiling gotch's C++ wrappers (a few minutes the first time)")
	return cmd.Run()
}
