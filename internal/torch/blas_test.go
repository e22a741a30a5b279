package torch

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBLASCoreIsOpenBLASsChoice runs itself in child processes with OPENBLAS_CORETYPE naming two AVX2 kernel
// sets (both run on any machine convrep builds on) and wants each reported back: BLASCore reads the kernels in
// use, not a guess from the CPU.
func TestBLASCoreIsOpenBLASsChoice(t *testing.T) {
	if os.Getenv("CONVREP_BLAS_CHILD") != "" {
		os.Stdout.WriteString("core=" + BLASCore() + "\n")
		return
	}
	if BLASCore() == "" {
		t.Skip("libtorch's BLAS here is not OpenBLAS")
	}
	for _, core := range []string{"Haswell", "Zen"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBLASCoreIsOpenBLASsChoice$")
		cmd.Env = append(os.Environ(), "CONVREP_BLAS_CHILD=1", "OPENBLAS_CORETYPE="+core)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "core="+core+"\n") {
			t.Errorf("with OPENBLAS_CORETYPE=%s the child reports:\n%s", core, out)
		}
	}
}
