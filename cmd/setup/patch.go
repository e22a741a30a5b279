package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// copyTree copies gotch's module folder (read-only in the module cache) into a writable folder.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}

// cgoFlags are the compiler and linker flags for code that includes libtorch's C++ headers.
// cgo passes CPPFLAGS to C++ files, CFLAGS only to C files: the ABI define must be in CPPFLAGS.
func cgoFlags(lt *libtorch) (cppflags, cxxflags, ldflags string) {
	cppflags = fmt.Sprintf("-D_GLIBCXX_USE_CXX11_ABI=%d", lt.ABI)
	cxxflags = "-std=c++17 -O1 -w -I" + filepath.Join(lt.Include, "torch/csrc/api/include")
	if !lt.Debian {
		cxxflags += " -I" + lt.Include
	}
	libs := "-ltorch -ltorch_cpu -lc10"
	if lt.CUDA {
		libs += " -ltorch_cuda -lc10_cuda"
	}
	ldflags = fmt.Sprintf("-L%s -Wl,-rpath,%s -Wl,--no-as-needed %s -Wl,--as-needed -lstdc++", lt.Lib, lt.Lib, libs)
	return cppflags, cxxflags, ldflags
}

// cgoHeader is the comment block of a cgo file carrying the flags above; extraCPP goes to C and C++ alike
// (cgo compiles the preambles of Go files as C, with CPPFLAGS and CFLAGS only).
func cgoHeader(lt *libtorch, extraCPP string) string {
	cpp, cxx, ld := cgoFlags(lt)
	return fmt.Sprintf("// #cgo CPPFLAGS: %s%s\n// #cgo CXXFLAGS: %s\n// #cgo LDFLAGS: %s\n", cpp, extraCPP, cxx, ld)
}

// patchGo rewrites gotch's link flags for this libtorch and fixes two memory faults of its generated Go code.
func patchGo(dir string, lt *libtorch) error {
	libGo := "// Code written by convrep's cmd/setup for libtorch " + lt.Version + ". DO NOT EDIT.\n\npackage libtch\n\n" +
		cgoHeader(lt, " -I${SRCDIR}") + "import \"C\"\n"
	if err := os.WriteFile(filepath.Join(dir, "libtch/lib.go"), []byte(libGo), 0o644); err != nil {
		return err
	}
	if err := panicInsteadOfExit(dir); err != nil {
		return err
	}
	if err := conciseErrors(dir); err != nil {
		return err
	}
	if err := fixIntReads(dir); err != nil {
		return err
	}
	for _, name := range []string{"ts/tensor-generated.go", "ts/tensor.go", "ts/patch.go"} {
		path := filepath.Join(dir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fixed, n := fixOutBuffers(fixInPlaceLeak(string(b)))
		if n == 0 && name == "ts/tensor-generated.go" {
			return fmt.Errorf("%s: no output buffer found to fix; gotch's generator changed", path)
		}
		if err := os.WriteFile(path, []byte(fixed), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// fixInPlaceLeak frees the tensor handle an in-place op replaces. gotch's in-place wrappers (Foo_) receive a
// new handle to the same tensor and overwrite the old one without deleting it, so every in-place op leaked a
// handle and kept its storage alive.
func fixInPlaceLeak(src string) string {
	return inPlaceRe.ReplaceAllString(src, "${1}old := ts.ctensor\n${1}ts.ctensor = *ptr\n${1}lib.AtFree(old)\n")
}

var inPlaceRe = regexp.MustCompile(`(?m)^([ \t]*)ts\.ctensor = \*ptr\n`)

// fixOutBuffers sizes and frees the buffer into which a wrapper's C function writes its output handles.
// gotch allocates it with malloc(0), never frees it, and ops with several outputs write past its end
// (ctensorPtr1, ctensorPtr2, … are offsets from the first). It returns the patched source and the number of
// buffers fixed.
func fixOutBuffers(src string) (string, int) {
	lines := strings.SplitAfter(src, "\n")
	var out strings.Builder
	fixed := 0
	for i := 0; i < len(lines); i++ {
		m := mallocRe.FindStringSubmatch(lines[i])
		if m == nil {
			out.WriteString(lines[i])
			continue
		}
		indent, name := m[1], m[2]
		n := 1
		for i+n < len(lines) && offsetRe.MatchString(lines[i+n]) {
			n++
		}
		out.WriteString(fmt.Sprintf("%s%s := (*lib.Ctensor)(C.malloc(C.size_t(%d) * C.size_t(unsafe.Sizeof(uintptr(0)))))\n", indent, name, n))
		for k := 1; k < n; k++ {
			out.WriteString(lines[i+k])
		}
		i += n - 1
		if i+1 >= len(lines) || !strings.Contains(lines[i+1], "C.free(unsafe.Pointer("+name+"))") {
			out.WriteString(fmt.Sprintf("%sdefer C.free(unsafe.Pointer(%s))\n", indent, name))
		}
		fixed++
	}
	return out.String(), fixed
}

var (
	mallocRe = regexp.MustCompile(`^([ \t]*)(\w+) := \(\*lib\.Ctensor\)\(unsafe\.Pointer\(C\.malloc\(0\)\)\)\s*$`)
	offsetRe = regexp.MustCompile(`^[ \t]*\w+ := \(\*lib\.Ctensor\)\(unsafe\.Pointer\(uintptr\(unsafe\.Pointer\(\w+\)\) \+ unsafe\.Sizeof\(\w+\)\)\)\s*$`)
)

// panicInsteadOfExit turns gotch's log.Fatal calls (every Must* function, the VarStore, the optimizer) into
// panics. log.Fatal exits the process with no deferred call run and nothing a caller can do; a panic can be
// recovered at convrep's API boundary (internal/torch.Catch) and returned as an ordinary error.
func panicInsteadOfExit(dir string) error {
	for _, pkg := range []string{"ts", "nn", "pickle"} {
		files, err := filepath.Glob(filepath.Join(dir, pkg, "*.go"))
		if err != nil {
			return err
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			// panic(err) rather than log.Panic(err): the caller reports the error, nothing needs printing.
			s := strings.NewReplacer("log.Fatal(err)", "panic(err)", "log.Fatalf(", "log.Panicf(", "log.Fatalln(", "log.Panicln(", "log.Fatal(", "log.Panic(").Replace(string(b))
			if !strings.Contains(s, "log.") {
				s = strings.Replace(s, "\n  \"log\"\n", "\n", 1)
				s = strings.Replace(s, "\n\t\"log\"\n", "\n", 1)
			}
			if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// conciseErrors makes gotch's libtorch errors one message: libtorch's own text without its C++ frames, and
// without the Go stack gotch appends, which belong in a debugger, not in an error a user reads.
func conciseErrors(dir string) error {
	path := filepath.Join(dir, "ts", "error.go")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	for old, repl := range map[string]string{
		"\t\ttrace := string(debug.Stack())\n":                          "\t\tif i := strings.Index(errStr, \"\\nException raised from\"); i >= 0 {\n\t\t\terrStr = errStr[:i]\n\t\t}\n",
		"fmt.Errorf(\"Libtorch API Error: %v\\n%v\\n\", errStr, trace)": "fmt.Errorf(\"libtorch: %v\", strings.TrimSpace(errStr))",
		"\t\"runtime/debug\"\n":                                         "\t\"strings\"\n",
	} {
		if !strings.Contains(s, old) {
			return fmt.Errorf("%s: %q not found; gotch's error reporting changed", path, old)
		}
		s = strings.Replace(s, old, repl, 1)
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

// fixIntReads converts C ints returned by libtorch with int(x). gotch reads them as *(*int)(&x), eight bytes
// from a four-byte C int: at_grad_set_enabled's previous mode came back as garbage, so restoring it could
// leave autograd off, and at_device's index was wrong.
func fixIntReads(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "libtch", "*.go"))
	if err != nil {
		return err
	}
	fixed := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		n := len(intReadRe.FindAllIndex(b, -1))
		if n == 0 {
			continue
		}
		fixed += n
		b = intReadRe.ReplaceAll(b, []byte("int($1)"))
		if !bytes.Contains(b, []byte("unsafe.")) { // the import would now be unused
			b = bytes.Replace(b, []byte("import (\n\t\"unsafe\"\n)\n"), nil, 1)
			b = bytes.Replace(b, []byte("\t\"unsafe\"\n"), nil, 1)
		}
		if err := os.WriteFile(f, b, 0o644); err != nil {
			return err
		}
	}
	if fixed == 0 {
		return fmt.Errorf("%s: no int read found to fix; gotch changed", filepath.Join(dir, "libtch"))
	}
	return nil
}

var intReadRe = regexp.MustCompile(`\*\(\*int\)\(unsafe\.Pointer\(&(\w+)\)\)`)
