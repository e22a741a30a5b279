package nvrtc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// These tests need NVRTC and no GPU: NVRTC compiles to PTX on the CPU. Where it is missing they fail, never
// skip: `go run ./cmd/setup` installs it (Debian's libnvrtc11.2), and a build that cannot compile its kernels
// must not pass.

// tiny is a kernel with one entry point, the shape of the kernels of internal/gpu/kernels: extern "C", no
// #include, erff from NVRTC's built-in math.
const tiny = `
extern "C" __global__ void convrep_tiny_gelu(const float *x, float *y, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678f));
	}
}
`

func TestVersion(t *testing.T) {
	major, minor, err := Version()
	if err != nil {
		t.Fatal(err)
	}
	if major < 11 {
		t.Errorf("NVRTC %d.%d: convrep needs 11.2 or later (compute_90 from 11.8)", major, minor)
	}
	t.Logf("NVRTC %d.%d from %s", major, minor, loaded.path)
}

// The PTX is for the architecture asked for and holds the kernel under its C name; a program that does not
// compile returns NVRTC's own message, with the file and line.
func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		arch int
		want []string // in the PTX
		err  []string // in the error
	}{
		{name: "sm_80", src: tiny, arch: 80, want: []string{".target sm_80", ".entry convrep_tiny_gelu("}},
		{name: "sm_90", src: tiny, arch: 90, want: []string{".target sm_90", ".entry convrep_tiny_gelu("}},
		{name: "syntax error", src: "extern \"C\" __global__ void broken(float *y) {\n\ty[0] = 1.0f\n}\n", arch: 80,
			err: []string{"compile tiny.cu for compute_80", "nvrtcCompileProgram", "tiny.cu(3): error"}},
		{name: "unknown identifier", src: "extern \"C\" __global__ void broken(float *y) { y[0] = nosuch(1.0f); }\n", arch: 90,
			err: []string{"tiny.cu(1): error", `identifier "nosuch" is undefined`}},
		{name: "no architecture", src: tiny, arch: 0, err: []string{"architecture 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ptx, err := Compile(tc.src, "tiny.cu", tc.arch)
			if tc.err != nil {
				if err == nil {
					t.Fatalf("compiled; want an error holding %q", tc.err)
				}
				for _, w := range tc.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !bytes.Contains(ptx, []byte(w)) {
					t.Errorf("PTX for compute_%d lacks %q:\n%s", tc.arch, w, head(ptx))
				}
			}
			if bytes.IndexByte(ptx, 0) >= 0 {
				t.Errorf("PTX holds a NUL byte (the size NVRTC reports counts the terminator)")
			}
		})
	}
}

// A second call finds the PTX on disk and compiles nothing; each kind of damaged file is compiled again and
// replaced, never used.
func TestCached(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte // nil: the file is left as written
	}{
		{name: "hit"},
		{name: "truncated", damage: func(b []byte) []byte { return b[:len(b)/2] }},
		{name: "empty", damage: func([]byte) []byte { return nil }},
		{name: "header only", damage: func(b []byte) []byte { return b[:bytes.IndexByte(b, '\n')+1] }},
		{name: "flipped byte", damage: func(b []byte) []byte {
			c := bytes.Clone(b)
			c[len(c)-10] ^= 0x20
			return c
		}},
		{name: "PTX of another program", damage: func(b []byte) []byte {
			head, _, _ := bytes.Cut(b, []byte("\n"))
			return append(bytes.Clone(head), "\n// not the program\n"...)
		}},
		{name: "garbage", damage: func([]byte) []byte { return []byte("\x00\x01 not a cache file") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "kernels") // created by Cached
			before := compiles.Load()
			first, err := Cached(dir, tiny, "tiny.cu", 80)
			if err != nil {
				t.Fatal(err)
			}
			if n := compiles.Load() - before; n != 1 {
				t.Fatalf("the first call compiled %d times, want 1", n)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*.ptx"))
			if len(files) != 1 {
				t.Fatalf("cache holds %q, want one .ptx file", files)
			}
			written, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			wantCompiles := int64(1)
			if tc.damage != nil {
				if err := os.WriteFile(files[0], tc.damage(written), 0o644); err != nil {
					t.Fatal(err)
				}
				wantCompiles = 2
			}
			second, err := Cached(dir, tiny, "tiny.cu", 80)
			if err != nil {
				t.Fatal(err)
			}
			if n := compiles.Load() - before; n != wantCompiles {
				t.Errorf("two calls compiled %d times, want %d", n, wantCompiles)
			}
			if !bytes.Equal(first, second) {
				t.Errorf("the second call returned other PTX (%d bytes, first %d)", len(second), len(first))
			}
			if again, _ := os.ReadFile(files[0]); !bytes.Equal(again, written) {
				t.Errorf("the cache file was not restored to what the first call wrote")
			}
		})
	}
}

// The key covers the architecture and the source: another of either compiles anew, into a file of its own.
func TestCachedKey(t *testing.T) {
	dir := t.TempDir()
	before := compiles.Load()
	for _, c := range []struct {
		src  string
		arch int
	}{{tiny, 80}, {tiny, 90}, {tiny + "\n// changed\n", 80}, {tiny, 80}, {tiny, 90}} {
		ptx, err := Cached(dir, c.src, "tiny.cu", c.arch)
		if err != nil {
			t.Fatal(err)
		}
		if want := ".target sm_" + strconv.Itoa(c.arch); !bytes.Contains(ptx, []byte(want)) {
			t.Errorf("Cached(compute_%d) returned PTX without %q", c.arch, want)
		}
	}
	if n := compiles.Load() - before; n != 3 {
		t.Errorf("five calls over three distinct programs compiled %d times, want 3", n)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.ptx")); len(files) != 3 {
		t.Errorf("cache holds %q, want three files", files)
	}
	if k1, k2 := cacheKey(tiny, "a", 80, 12, 4), cacheKey(tiny, "a", 80, 12, 8); k1 == k2 {
		t.Errorf("the key does not cover NVRTC's version")
	}
}

// Runs that share the cache folder, and goroutines of one run, get whole files and the same PTX.
func TestCachedConcurrent(t *testing.T) {
	dir := t.TempDir()
	want, err := Compile(tiny, "tiny.cu", 80)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([][]byte, 4)
	errs := make([]error, len(got))
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = Cached(dir, tiny, "tiny.cu", 80)
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !bytes.Equal(got[i], want) {
			t.Errorf("goroutine %d got other PTX than Compile's", i)
		}
	}
}

// Where no library loads, the error lists every name tried; $CONVREP_NVRTC, when set, is the only one tried,
// and a library without NVRTC's functions is refused by the missing one.
func TestMissingLibrary(t *testing.T) {
	libc := "libc.so.6"
	for _, tc := range []struct {
		name    string
		env     string
		sonames []string
		want    []string
	}{
		{name: "no soname loads", sonames: []string{"libnvrtc-convrep-missing.so.13", "libnvrtc-convrep-missing.so.12"},
			want: []string{"no NVRTC library loads", "tried libnvrtc-convrep-missing.so.13, libnvrtc-convrep-missing.so.12 from the dynamic loader's search path",
				"libnvrtc-convrep-missing.so.12: cannot open shared object file", "CONVREP_NVRTC", "cmd/setup"}},
		{name: "CONVREP_NVRTC missing", env: "/nonexistent/libnvrtc.so.12", sonames: sonames,
			want: []string{"tried /nonexistent/libnvrtc.so.12 from $CONVREP_NVRTC", "No such file"}},
		{name: "not NVRTC", env: libc, sonames: sonames, want: []string{"libc.so.6: no symbol nvrtcVersion"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvLibrary, tc.env)
			saved := sonames
			sonames = tc.sonames
			t.Cleanup(func() { sonames = saved })
			l, err := open()
			if err == nil {
				t.Fatalf("loaded %s; want an error", l.path)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// A long log is cut at a line's end and says how much is left out.
func TestTrimLog(t *testing.T) {
	line := "k.cu(1): error: something is wrong here\n"
	long := strings.Repeat(line, 2*maxLog/len(line))
	got := trimLog(long)
	if len(got) > maxLog+100 || !strings.HasPrefix(got, line) || !strings.Contains(got, "more bytes of NVRTC's log") {
		t.Errorf("trimLog of %d bytes gave %d bytes ending %q", len(long), len(got), got[len(got)-60:])
	}
	if got := trimLog("a.cu(2): error: x\n\x00"); got != "a.cu(2): error: x" {
		t.Errorf("trimLog of a short log = %q", got)
	}
}

func head(b []byte) string {
	if len(b) > 800 {
		return string(b[:800]) + "..."
	}
	return string(b)
}
