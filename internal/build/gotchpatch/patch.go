package gotchpatch

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"convrep/internal/build/libtorch"
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

// patchGo rewrites gotch's link flags for this libtorch, fixes memory faults of its generated Go code and makes
// a tensor handle cheap (lightHandles).
func patchGo(dir string, lt *libtorch.Libtorch) error {
	libGo := "// Code written by convrep's cmd/setup for libtorch " + lt.Version + ". DO NOT EDIT.\n\npackage libtch\n\n" +
		libtorch.CgoHeader(lt, " -I${SRCDIR}") + "import \"C\"\n"
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
	if err := lightHandles(dir); err != nil {
		return err
	}
	if err := fixRunBackward(dir); err != nil {
		return err
	}
	if err := countCalls(dir); err != nil {
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
		if name == "ts/tensor-generated.go" {
			if fixed, n = keepAlive(fixed); n == 0 {
				return fmt.Errorf("%s: no libtorch call found to keep its arguments alive across; gotch's generator changed", path)
			}
		}
		fixed = dropUnusedImport(fixed, "unsafe")
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

// fixOutBuffers gives a wrapper's C function a Go array to write its output handles into. gotch allocated that
// buffer with malloc(0), never freed it, and ops with several outputs wrote past its end (ctensorPtr1,
// ctensorPtr2, … are offsets from the first). A Go array of the op's outputs needs no C.malloc and C.free (two
// cgo calls per op) and no defer; it holds C pointers only, which cgo lets C write into during the call, and
// the garbage collector reclaims it. It returns the patched source and the number of buffers fixed.
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
		var more []string // the names of the outputs after the first
		for i+1+len(more) < len(lines) {
			o := offsetRe.FindStringSubmatch(lines[i+1+len(more)])
			if o == nil {
				break
			}
			more = append(more, o[1])
		}
		out.WriteString(fmt.Sprintf("%svar %sBuf [%d]lib.Ctensor\n%s%s := &%sBuf[0]\n", indent, name, 1+len(more), indent, name, name))
		for k, other := range more {
			out.WriteString(fmt.Sprintf("%s%s := &%sBuf[%d]\n", indent, other, name, k+1))
		}
		i += len(more)
		if i+1 < len(lines) && strings.TrimSpace(lines[i+1]) == "defer C.free(unsafe.Pointer("+name+"))" {
			i++ // Go memory: C.free must not see it
		}
		fixed++
	}
	return out.String(), fixed
}

var (
	mallocRe = regexp.MustCompile(`^([ \t]*)(\w+) := \(\*lib\.Ctensor\)\(unsafe\.Pointer\(C\.malloc\(0\)\)\)\s*$`)
	offsetRe = regexp.MustCompile(`^[ \t]*(\w+) := \(\*lib\.Ctensor\)\(unsafe\.Pointer\(uintptr\(unsafe\.Pointer\(\w+\)\) \+ unsafe\.Sizeof\(\w+\)\)\)\s*$`)
)

// keepAlive keeps every tensor and scalar a generated wrapper hands to libtorch reachable until the call
// returns. A wrapper reads x.ctensor (or x.cscalar) and passes the C pointer on; when the caller makes no
// further use of x (ts.MustArange(ts.IntScalar(n), ...), a temporary's op with del = false), x is garbage as
// soon as its field is read, and a collection during the C call runs its finalizer, which frees the very
// object libtorch is reading: a scalar read back as garbage ("Expected false to be true" from c10::Scalar's
// accessors) or a tensor used after it is freed. runtime.KeepAlive after the call closes that window, as the
// runtime's documentation prescribes for finalizers and cgo. Slices of tensors are kept whole. It returns the
// patched source and the number of calls guarded.
func keepAlive(src string) (string, int) {
	lines := strings.SplitAfter(src, "\n")
	var out strings.Builder
	guarded := 0
	for start := 0; start < len(lines); {
		end := start + 1 // the function is lines[start:end]: up to the next line that opens one
		for end < len(lines) && !strings.HasPrefix(lines[end], "func") {
			end++
		}
		body := strings.Join(lines[start:end], "")
		loops := map[string]string{} // a range loop's variable → the slice it ranges over
		for _, m := range rangeRe.FindAllStringSubmatch(body, -1) {
			loops[m[1]] = m[2]
		}
		seen := map[string]bool{}
		var names []string
		for _, m := range handleRe.FindAllStringSubmatch(body, -1) {
			name := m[1]
			if slice, ok := loops[name]; ok {
				name = slice
			}
			if name != "retVal" && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
		for _, line := range lines[start:end] {
			out.WriteString(line)
			m := callRe.FindStringSubmatch(line)
			if m == nil || len(names) == 0 {
				continue
			}
			for _, name := range names {
				out.WriteString(m[1] + "runtime.KeepAlive(" + name + ")\n")
			}
			guarded++
		}
		start = end
	}
	if guarded == 0 {
		return src, 0
	}
	return addImport(out.String(), "runtime"), guarded
}

var (
	handleRe = regexp.MustCompile(`\b([A-Za-z_]\w*)\.c(?:tensor|scalar)\b`)
	rangeRe  = regexp.MustCompile(`for _, (\w+) := range (\w+) \{`)
	callRe   = regexp.MustCompile(`^([ \t]*)(?:retVal = )?lib\.At\w*\(.*\)\s*$`)
)

// addImport adds pkg to the first import block of src when it is not imported yet.
func addImport(src, pkg string) string {
	if strings.Contains(src, "\""+pkg+"\"\n") {
		return src
	}
	for _, open := range []string{"import(\n", "import (\n"} {
		if i := strings.Index(src, open); i >= 0 {
			return src[:i+len(open)] + "  \"" + pkg + "\"\n" + src[i+len(open):]
		}
	}
	return src
}

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

// conciseErrors makes gotch's libtorch errors one message: libtorch's own text without its C++ frames (after
// "Exception raised from", or after the first "frame #" of an enforce failure such as the CPU allocator's "can't
// allocate memory: you tried to allocate N bytes"), and without the Go stack gotch appends, which belong in a
// debugger, not in an error a user reads.
func conciseErrors(dir string) error {
	path := filepath.Join(dir, "ts", "error.go")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	for old, repl := range map[string]string{
		"\t\ttrace := string(debug.Stack())\n":                          "\t\tfor _, tail := range []string{\"\\nException raised from\", \"\\nframe #\"} {\n\t\t\tif i := strings.Index(errStr, tail); i >= 0 {\n\t\t\t\terrStr = errStr[:i]\n\t\t\t}\n\t\t}\n",
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

// lightHandles makes a gotch tensor handle a small Go struct. gotch gave each one a zeroed 100 KB Go
// allocation (so that Go's garbage collector, which cannot see libtorch's memory, would run often enough for
// finalizers to free tensors), a unique name made with Sprintf and entered in a global map under a global lock,
// and checked that map again under the lock on every free. convrep frees tensors explicitly (Drop, and
// internal/torch.Scope for what a step made), so the handle keeps only its pointer, its op's name and a
// finalizer as a safety net, run by a garbage collection each time the count of live handles doubles (a count
// replaces the map); a hook lets a Scope see every handle made. Scalars lose the map and lock too.
func lightHandles(dir string) error {
	path := filepath.Join(dir, "ts", "tensor.go")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	for _, d := range []struct{ head, repl string }{
		{"type bigStruct struct {", ""},
		{"func newTensor(ctensor lib.Ctensor, nameOpt ...string) *Tensor {", newTensorSrc},
		{"func freeCTensor(ts *Tensor) error {", freeCTensorSrc},
		{"func CheckCMemLeak() string {", checkCMemLeakSrc},
	} {
		if s, err = replaceDecl(s, d.head, d.repl); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if s, err = replaceOnce(s, "\td          *bigStruct\n", ""); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	s = dropUnusedImport(s, "log")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ts", "convrep_handles.go"), []byte(handlesSrc), 0o644); err != nil {
		return err
	}

	path = filepath.Join(dir, "ts", "scalar.go")
	if b, err = os.ReadFile(path); err != nil {
		return err
	}
	s = string(b)
	for _, r := range [][2]string{
		{"\tlock.Lock()\n\tdelete(ExistingScalars, x.name)\n\tlock.Unlock()\n\n\tlib.AtsFree(x.cscalar)\n\tif err := TorchErr(); err != nil {\n\t\treturn err\n\t}\n",
			"\tlib.AtsFree(x.cscalar) // a plain delete: it cannot set libtorch's error\n"},
		{"\tlock.Lock()\n\tx.name = newName(nameOpt...)\n\tExistingScalars[x.name] = struct{}{}\n\tlock.Unlock()\n",
			"\tif len(nameOpt) > 0 {\n\t\tx.name = nameOpt[0]\n\t}\n"},
	} {
		if s, err = replaceOnce(s, r[0], r[1]); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

const newTensorSrc = `func newTensor(ctensor lib.Ctensor, nameOpt ...string) *Tensor {
	x := &Tensor{ctensor: ctensor, calledFrom: "newTensor()"}
	if len(nameOpt) > 0 {
		x.name = nameOpt[0]
	}
	atomic.AddInt64(&TensorCount, 1)
	if n := atomic.AddInt64(&liveTensors, 1); n >= atomic.LoadInt64(&collectAt) {
		collectLeaks(n)
	}
	runtime.SetFinalizer(x, freeCTensor) // a safety net: convrep drops tensors explicitly
	if hook := newTensorHook.Load(); hook != nil {
		(*hook)(x)
	}
	return x
}
`

const freeCTensorSrc = `func freeCTensor(ts *Tensor) error {
	if ts == nil || ts.ctensor == nil {
		return nil
	}
	lib.AtFree(ts.ctensor) // a plain delete, outside PROTECT: it cannot set libtorch's error
	ts.ctensor = nil       // a second Drop, or the finalizer after a Drop, does nothing
	atomic.AddInt64(&liveTensors, -1)
	runtime.SetFinalizer(ts, nil)
	return nil
}
`

const checkCMemLeakSrc = `func CheckCMemLeak() string {
	return fmt.Sprintf("tensor handles not released: %d\n", LiveTensors())
}
`

const handlesSrc = `// Code written by convrep's cmd/setup (lightHandles). DO NOT EDIT.

package ts

import (
	"runtime"
	"sync/atomic"
)

var (
	liveTensors   int64                        // handles made and not yet freed
	newTensorHook atomic.Pointer[func(*Tensor)] // called with every handle made; nil when none
	collectAt     int64 = 1 << 14              // the live count at which collectLeaks runs next
)

// collectLeaks starts a garbage collection, whose finalizers free the handles nobody dropped, when the live
// count reaches twice what it was at the last one. The Go heap no longer grows with libtorch's memory, so the
// collector alone would run too rarely for the finalizers to be a safety net; code that drops its tensors
// keeps the count flat and never pays for one.
func collectLeaks(n int64) {
	at := atomic.LoadInt64(&collectAt)
	if n >= at && atomic.CompareAndSwapInt64(&collectAt, at, 2*n) {
		go runtime.GC()
	}
}

// LiveTensors is the number of tensor handles made and not yet freed, by Drop or by a finalizer.
func LiveTensors() int64 { return atomic.LoadInt64(&liveTensors) }

// SetNewTensorHook has f called with every tensor handle made from now on, on the goroutine that makes it;
// nil removes the hook. convrep's internal/torch.Scope uses it to free what a training step made.
func SetNewTensorHook(f func(*Tensor)) {
	if f == nil {
		newTensorHook.Store(nil)
		return
	}
	newTensorHook.Store(&f)
}
`

// fixRunBackward gives at_run_backward contiguous arrays. It reads ntensors roots and ninputs inputs and
// writes ninputs gradients, each an array from its first element; gotch passed the address of a copy of
// the first root and of the first input, and one separately allocated output slot per input.
func fixRunBackward(dir string) error {
	path := filepath.Join(dir, "ts", "tensor.go")
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s, err := replaceOnce(string(b), `	for i := 0; i < len(inputs); i++ {
		outputPtr := (*lib.Ctensor)(unsafe.Pointer(C.malloc(0)))
		defer C.free(unsafe.Pointer(outputPtr))
		outputsPtr = append(outputsPtr, outputPtr)
	}

	// Get first element pointer
	ctensor := tensors[0].ctensor
	cinput := inputs[0].ctensor
	tensorsPtr := (*lib.Ctensor)(unsafe.Pointer(&ctensor))
	inputsPtr := (*lib.Ctensor)(unsafe.Pointer(&cinput))
`, `	// Go slices holding C pointers only, which cgo lets C read and write during the call.
	outputs := make([]lib.Ctensor, len(inputs))
	for i := range outputs {
		outputsPtr = append(outputsPtr, &outputs[i])
	}
	ctensors, cinputs := make([]lib.Ctensor, len(tensors)), make([]lib.Ctensor, len(inputs))
	for i, t := range tensors {
		ctensors[i] = t.ctensor
	}
	for i, t := range inputs {
		cinputs[i] = t.ctensor
	}
	tensorsPtr, inputsPtr := &ctensors[0], &cinputs[0]
`)
	if err != nil {
		return fmt.Errorf("%s: RunBackward: %w", path, err)
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

// replaceOnce replaces old, which must occur exactly once in s: a patch whose anchor is missing or ambiguous
// means gotch changed, and the set-up stops rather than build a copy it did not mean to.
func replaceOnce(s, old, repl string) (string, error) {
	if n := strings.Count(s, old); n != 1 {
		return s, fmt.Errorf("expected text found %d times, want once; gotch changed:\n%s", n, old)
	}
	return strings.Replace(s, old, repl, 1), nil
}

// replaceDecl replaces the top-level declaration that begins with the line head and ends at the next line
// that is a lone "}" with repl (a whole declaration, or nothing).
func replaceDecl(s, head, repl string) (string, error) {
	if n := strings.Count(s, "\n"+head+"\n"); n != 1 {
		return s, fmt.Errorf("declaration %q found %d times, want once; gotch changed", head, n)
	}
	start := strings.Index(s, "\n"+head+"\n") + 1
	end := strings.Index(s[start:], "\n}\n")
	if end < 0 {
		return s, fmt.Errorf("declaration %q has no end", head)
	}
	return s[:start] + repl + s[start+end+len("\n}\n"):], nil
}

// dropUnusedImport removes the import of pkg (a standard package imported by its bare path) from Go source
// that no longer uses it; the compiler rejects an unused import.
func dropUnusedImport(src, pkg string) string {
	if regexp.MustCompile(`\b` + pkg + `\.`).MatchString(src) {
		return src
	}
	line := regexp.MustCompile(`(?m)^[ \t]*"` + pkg + `"[ \t]*\n`)
	if loc := line.FindStringIndex(src); loc != nil {
		return src[:loc[0]] + src[loc[1]:]
	}
	return src
}
