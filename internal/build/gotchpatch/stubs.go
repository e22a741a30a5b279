package gotchpatch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"convrep/internal/build/libtorch"
)

const generatedCpp = "torch_api_generated.cpp.h"

// stubUncompilable replaces every generated wrapper that this libtorch cannot compile with a stub that
// reports an error through gotch's thread-local torch_last_err, the path its PROTECT macro uses, so the Go
// side gets an ordinary error if such an op is ever called. The wrappers are found from the compiler's
// errors, not from a hand-made list, so a different libtorch gets its own set. It returns their names.
func stubUncompilable(dir string, lt *libtorch.Libtorch) ([]string, error) {
	path := filepath.Join(dir, "libtch", generatedCpp)
	var all []string
	for pass := 1; pass <= 10; pass++ {
		diag, err := syntaxCheck(dir, lt)
		if err == nil {
			sort.Strings(all)
			return all, nil
		}
		lines, foreign := errorLines(diag)
		if len(lines) == 0 {
			return nil, fmt.Errorf("libtch does not compile against libtorch %s, and not in %s:\n%s", lt.Version, generatedCpp, libtorch.Tail(diag, 40))
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		patched, names, err := stubFunctions(string(src), lines)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("compiler errors in %s (lines %v) lie outside any wrapper; other errors: %v", generatedCpp, lines, foreign)
		}
		if err := os.WriteFile(path, []byte(patched), 0o644); err != nil {
			return nil, err
		}
		all = append(all, names...)
		fmt.Printf("setup: pass %d stubbed %d wrappers\n", pass, len(names))
	}
	return nil, fmt.Errorf("%s still does not compile after 10 passes", path)
}

// syntaxCheck runs the C++ front end over gotch's wrappers (about 15 s) and returns its diagnostics.
func syntaxCheck(dir string, lt *libtorch.Libtorch) (string, error) {
	cpp, cxx, _ := libtorch.CgoFlags(lt)
	args := append(strings.Fields(cpp), strings.Fields(cxx)...)
	args = append(args, "-I"+filepath.Join(dir, "libtch"), "-fsyntax-only", "-fmax-errors=0", filepath.Join(dir, "libtch", "torch_api.cpp"))
	cmd := exec.Command("g++", args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

var diagRe = regexp.MustCompile(regexp.QuoteMeta(generatedCpp) + `:(\d+):`)

// errorLines collects the lines of the generated file that the compiler names, in errors and in
// "required from" notes, and counts diagnostics that name no line of it.
func errorLines(diag string) (lines []int, foreign int) {
	seen := map[int]bool{}
	for _, l := range strings.Split(diag, "\n") {
		ms := diagRe.FindAllStringSubmatch(l, -1)
		if len(ms) == 0 {
			if strings.Contains(l, "error:") {
				foreign++
			}
			continue
		}
		for _, m := range ms {
			n, _ := strconv.Atoi(m[1])
			if !seen[n] {
				seen[n] = true
				lines = append(lines, n)
			}
		}
	}
	sort.Ints(lines)
	return lines, foreign
}

var funcStartRe = regexp.MustCompile(`^[A-Za-z_][\w \*]*\b(atg_\w+)\(.*\) \{$`)

// stubFunctions replaces the body of each wrapper enclosing one of the given 1-based lines.
func stubFunctions(src string, lines []int) (string, []string, error) {
	text := strings.Split(src, "\n")
	type span struct{ start, end int }
	spans := map[string]span{}
	var order []string
	for _, ln := range lines {
		i := ln - 1
		if i < 0 || i >= len(text) {
			continue
		}
		start := i
		for start >= 0 && !funcStartRe.MatchString(text[start]) {
			start--
		}
		if start < 0 {
			continue
		}
		end := start + 1
		for end < len(text) && text[end] != "}" {
			end++
		}
		if end >= len(text) || i > end {
			continue // the line lies between wrappers
		}
		name := funcStartRe.FindStringSubmatch(text[start])[1]
		if _, ok := spans[name]; !ok {
			spans[name] = span{start, end}
			order = append(order, name)
		}
	}
	// Replace from the bottom up so that earlier spans keep their line numbers.
	sort.Slice(order, func(a, b int) bool { return spans[order[a]].start > spans[order[b]].start })
	for _, name := range order {
		s := spans[name]
		body := []string{text[s.start],
			fmt.Sprintf(`  torch_last_err = strdup("%s: not available in the libtorch gotch was built against (stubbed by convrep's setup)");`, name)}
		if !strings.HasPrefix(text[s.start], "void ") {
			body = append(body, "  return {};")
		}
		body = append(body, "}")
		text = append(text[:s.start], append(body, text[s.end+1:]...)...)
	}
	sort.Strings(order)
	return strings.Join(text, "\n"), order, nil
}
