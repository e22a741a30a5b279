package gotchpatch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCountCallsIn(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
		counted         int
	}{
		{
			name:    "a generated op",
			src:     "func AtgAbs(ptr *Ctensor, self Ctensor){ \n\tC.atg_abs(ptr, self)\n}\n",
			want:    "func AtgAbs(ptr *Ctensor, self Ctensor){ \n\tcalls.Add(1)\n\tC.atg_abs(ptr, self)\n}\n",
			counted: 1,
		},
		{
			name:    "assignments and returns of hand-written bindings",
			src:     "\tretVal := C.at_defined(ts)\n\treturn C.ats_int(v)\n\tcint = C.atc_cuda_device_count()\n",
			want:    "\tcalls.Add(1)\n\tretVal := C.at_defined(ts)\n\tcalls.Add(1)\n\treturn C.ats_int(v)\n\tcalls.Add(1)\n\tcint = C.atc_cuda_device_count()\n",
			counted: 3,
		},
		{
			name:    "two calls on one line count twice",
			src:     "  use(C.ati_none(), C.ati_int(x))\n",
			want:    "  calls.Add(1); calls.Add(1)\n  use(C.ati_none(), C.ati_int(x))\n",
			counted: 2,
		},
		{
			name: "frees, the error slot, C helpers and comments are not counted",
			src: "\tC.at_free(ts)\n\tC.ats_free(s)\n\tC.ato_free(o)\n\treturn C.get_and_reset_last_err()\n" +
				"\tdefer C.free(unsafe.Pointer(p))\n\tcs := C.CString(s)\n// return C.atg_randn1(c)\n",
			want: "\tC.at_free(ts)\n\tC.ats_free(s)\n\tC.ato_free(o)\n\treturn C.get_and_reset_last_err()\n" +
				"\tdefer C.free(unsafe.Pointer(p))\n\tcs := C.CString(s)\n// return C.atg_randn1(c)\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := countCallsIn(tc.src)
			if got != tc.want || n != tc.counted {
				t.Errorf("countCallsIn counted %d, want %d; got\n%s\nwant\n%s", n, tc.counted, got, tc.want)
			}
		})
	}
}

// countCalls rewrites the bindings and adds the counter, and refuses a libtch without a binding to count
// (gotch's generator changed, and counts of 0 would pass for the truth).
func TestCountCalls(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libtch")
	if err := os.Mkdir(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(lib, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lib.go", "package libtch\n\nimport \"C\"\n")
	if err := countCalls(dir); err == nil || !strings.Contains(err.Error(), "no call into libtorch") {
		t.Fatalf("countCalls without bindings: error %v", err)
	}
	write("tensor.go", "package libtch\n\nfunc AtDim(t Ctensor) uint64 {\n\tresult := C.at_dim(t)\n\treturn uint64(result)\n}\n")
	if err := countCalls(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(lib, "tensor.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\tcalls.Add(1)\n\tresult := C.at_dim(t)\n") {
		t.Errorf("tensor.go not counted:\n%s", b)
	}
	c, err := os.ReadFile(filepath.Join(lib, "count.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"package libtch", "var calls atomic.Int64", "func Calls() int64", "func AddCalls(n int64)"} {
		if !strings.Contains(string(c), want) {
			t.Errorf("count.go lacks %q:\n%s", want, c)
		}
	}
}
