package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"convrep/evaluate"
	"convrep/internal/atomicfile"
)

// Common holds the flags every model-side task takes.
type Common struct {
	Model               Model
	Data                Data
	Seeds               string // "0-9", "0,3,5" or "7"
	Splits, WriteSplits string // folders to read saved splits from, and to save the sampled ones in
	Output              string // the result's JSON file ("": Markdown on stdout)
	Quiet               bool   // no progress bar
}

func (c *Common) splitIO() evaluate.SplitIO {
	return evaluate.SplitIO{Read: c.Splits, Write: c.WriteSplits}
}

// ParseSeeds reads "0-9", "0,3,5" or "7".
func ParseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if lo, hi, ok := strings.Cut(part, "-"); ok {
			a, err1 := strconv.ParseUint(lo, 10, 64)
			b, err2 := strconv.ParseUint(hi, 10, 64)
			if err1 != nil || err2 != nil || b < a {
				return nil, fmt.Errorf("--seeds %q: %q is not a range like 0-9", s, part)
			}
			for x := a; x <= b; x++ {
				out = append(out, x)
			}
			continue
		}
		x, err := strconv.ParseUint(part, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--seeds %q: %q is not a seed", s, part)
		}
		out = append(out, x)
	}
	return out, nil
}

// parseShots reads "1,5".
func parseShots(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || k < 1 {
			return nil, fmt.Errorf("--shots %q: %q is not a positive number", s, part)
		}
		out = append(out, k)
	}
	return out, nil
}

// writeResult writes r as JSON to path and as Markdown beside it (or Markdown to stdout without a path). A
// path that is a folder (one that exists, as --write-splits may have made it, or ends in a slash) gets the
// result inside it, named after the task.
func writeResult(r *evaluate.Result, path string) error {
	if path == "" {
		return r.Markdown(os.Stdout)
	}
	if st, err := os.Stat(path); (err == nil && st.IsDir()) || strings.HasSuffix(path, string(filepath.Separator)) {
		path = filepath.Join(path, strings.NewReplacer(":", "-", "/", "-").Replace(r.Task)+".json")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := r.WriteJSON(path); err != nil {
		return err
	}
	var b strings.Builder
	if err := r.Markdown(&b); err != nil {
		return err
	}
	md := strings.TrimSuffix(path, filepath.Ext(path)) + ".md"
	return atomicfile.WriteFile(md, []byte(b.String()))
}
