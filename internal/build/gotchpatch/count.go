package gotchpatch

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// countCalls makes gotch's C bindings (package libtch) count the calls they make into libtorch, so that a
// training step's calls can be counted (cmd/bench reports them per phase; the issue that asked for it, 22, found
// a step on the GPU bound by its host thread, about one kernel launch per call). Each statement that calls a
// libtorch binding gets an atomic increment before it, and libtch gains Calls (the count so far) and AddCalls
// (for calls made through other bindings, such as convrep's shim). Frees of handles and scalars are not
// counted: finalizers run them at moments of the garbage collector's choosing, and a count must be the same
// for the same step; nor are reads of libtorch's error slot, which follow every op.
func countCalls(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "libtch", "*.go"))
	if err != nil {
		return err
	}
	total := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		src, n := countCallsIn(string(b))
		if n == 0 {
			continue
		}
		total += n
		if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
			return err
		}
	}
	if total == 0 {
		return fmt.Errorf("%s: no call into libtorch found to count; gotch changed", filepath.Join(dir, "libtch"))
	}
	return os.WriteFile(filepath.Join(dir, "libtch", "count.go"), []byte(countSrc), 0o644)
}

// countCallsIn inserts "calls.Add(1)" before each statement of src that calls a libtorch binding (every
// generated atg_* op and the hand-written at_*, ats_*, ato_*, ati_*, atc_*, atm_* functions), once per call
// on the line, and returns the new source and the number of calls counted. gotch's bindings call libtorch
// in statements of their own (a call, an assignment, a return), never inside a longer expression.
func countCallsIn(src string) (string, int) {
	lines := strings.SplitAfter(src, "\n")
	var out strings.Builder
	counted := 0
	for _, line := range lines {
		if trimmed := strings.TrimSpace(line); !strings.HasPrefix(trimmed, "//") {
			n := 0
			for _, m := range bindingRe.FindAllStringSubmatch(line, -1) {
				if !uncounted[m[1]] {
					n++
				}
			}
			if n > 0 {
				indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
				out.WriteString(indent + strings.Repeat("calls.Add(1); ", n-1) + "calls.Add(1)\n")
				counted += n
			}
		}
		out.WriteString(line)
	}
	return out.String(), counted
}

var bindingRe = regexp.MustCompile(`\bC\.(at[a-z]?_\w+)\(`)

// uncounted are the bindings that are not libtorch work a step asks for: frees, which finalizers may run.
var uncounted = map[string]bool{
	"at_free": true, "ats_free": true, "ato_free": true, "atm_free": true, "ati_free": true,
}

const countSrc = `// Code written by convrep's cmd/setup (countCalls). DO NOT EDIT.

package libtch

import "sync/atomic"

var calls atomic.Int64

// Calls is the number of calls into libtorch made so far through these bindings, from every goroutine, plus
// those AddCalls reported. Frees of tensor, scalar, optimizer, module and IValue handles are not counted.
func Calls() int64 { return calls.Load() }

// AddCalls counts n calls into libtorch made through other bindings (convrep's shim).
func AddCalls(n int64) { calls.Add(n) }
`
