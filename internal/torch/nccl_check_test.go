package torch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nccl_check.h refuses, at compile time, an nccl.h of another minor release than the NCCL libtorch loads: the
// one cmd/setup read from the library (CONVREP_NCCL_LIB_VERSION_CODE, 0 here for none), else for libtorch 2.1
// the one it was built with (2.18); any other libtorch without the define is refused. This machine has no
// NCCL: the header is preprocessed against stand-ins for <torch/version.h> and <nccl.h> that define what the
// real ones do.
func TestNCCLCheckRefusesOtherReleases(t *testing.T) {
	gxx, err := exec.LookPath("g++")
	if err != nil {
		t.Fatal("g++ is needed (cgo compiles the shim with it)")
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		torch          [2]int
		nccl           [3]int
		libCode        int // CONVREP_NCCL_LIB_VERSION_CODE, 0 for none
		ok             bool
		wantInMessages string
	}{
		{[2]int{2, 1}, [3]int{2, 18, 1}, 0, true, ""},
		{[2]int{2, 1}, [3]int{2, 18, 3}, 0, true, ""},
		{[2]int{2, 1}, [3]int{2, 17, 1}, 0, false, "libnccl-dev=2.18.1-1+cuda12.1"},
		{[2]int{2, 1}, [3]int{2, 19, 3}, 0, false, "libnccl-dev=2.18.1-1+cuda12.1"},
		{[2]int{2, 1}, [3]int{2, 18, 1}, 21801, true, ""},
		{[2]int{2, 11}, [3]int{2, 28, 9}, 22809, true, ""},
		{[2]int{2, 11}, [3]int{2, 28, 3}, 22809, true, ""},
		{[2]int{2, 11}, [3]int{2, 27, 7}, 22809, false, "another NCCL release than the library"},
		{[2]int{2, 11}, [3]int{2, 28, 9}, 21801, false, "another NCCL release than the library"},
		{[2]int{2, 11}, [3]int{2, 28, 9}, 0, false, "did not say which NCCL"},
		{[2]int{2, 2}, [3]int{2, 18, 1}, 0, false, "did not say which NCCL"},
	} {
		name := fmt.Sprintf("libtorch %d.%d, NCCL %d.%d.%d, library %d", c.torch[0], c.torch[1], c.nccl[0], c.nccl[1], c.nccl[2], c.libCode)
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{
				"torch/version.h": fmt.Sprintf("#define TORCH_VERSION_MAJOR %d\n#define TORCH_VERSION_MINOR %d\n", c.torch[0], c.torch[1]),
				// As nccl.h (2.9 and later) defines them.
				"nccl.h": fmt.Sprintf("#define NCCL_MAJOR %d\n#define NCCL_MINOR %d\n#define NCCL_PATCH %d\n"+
					"#define NCCL_VERSION(X,Y,Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))\n"+
					"#define NCCL_VERSION_CODE %d\n", c.nccl[0], c.nccl[1], c.nccl[2], c.nccl[0]*10000+c.nccl[1]*100+c.nccl[2]),
				"main.cpp": "#include <torch/version.h>\n#include <nccl.h>\n#include \"nccl_check.h\"\n",
			}
			for name, body := range files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := []string{"-E", "-x", "c++", "-I", dir, "-I", wd}
			if c.libCode != 0 {
				args = append(args, fmt.Sprintf("-DCONVREP_NCCL_LIB_VERSION_CODE=%d", c.libCode))
			}
			out, err := exec.Command(gxx, append(args, filepath.Join(dir, "main.cpp"))...).CombinedOutput()
			if c.ok && err != nil {
				t.Fatalf("refused: %v\n%s", err, out)
			}
			if !c.ok && (err == nil || !strings.Contains(string(out), c.wantInMessages)) {
				t.Fatalf("accepted or refused without saying %q: %v\n%s", c.wantInMessages, err, out)
			}
		})
	}
}
