package objectives

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Settings is the [objective] table of an experiment file as the TOML decoder gives it (numbers as int64 or
// float64). Each objective's parser reads it strictly: a key it does not know is an error naming the key, so a typo
// cannot silently fall back to a default.
type Settings map[string]any

// settingsReader reads typed values out of Settings, remembering the first error and the keys read.
type settingsReader struct {
	s    Settings
	read map[string]bool
	err  error
}

func (s Settings) reader() *settingsReader { return &settingsReader{s: s, read: map[string]bool{}} }

func (r *settingsReader) fail(key string, v any, want string) {
	if r.err == nil {
		r.err = fmt.Errorf("setting %s = %v (%T): want %s", key, v, v, want)
	}
}

// number reads a finite number, def when the key is absent.
func (r *settingsReader) number(key string, def float64) float64 {
	r.read[key] = true
	v, ok := r.s[key]
	if !ok {
		return def
	}
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int64:
		f = float64(x)
	case int:
		f = float64(x)
	default:
		r.fail(key, v, "a number")
		return def
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		r.fail(key, v, "a finite number")
		return def
	}
	return f
}

// integer reads a whole number, def when the key is absent.
func (r *settingsReader) integer(key string, def int64) int64 {
	r.read[key] = true
	v, ok := r.s[key]
	if !ok {
		return def
	}
	switch x := v.(type) {
	case int64:
		return x
	case int:
		return int64(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x)
		}
	}
	r.fail(key, v, "a whole number")
	return def
}

// text reads a string, def when the key is absent.
func (r *settingsReader) text(key, def string) string {
	r.read[key] = true
	v, ok := r.s[key]
	if !ok {
		return def
	}
	s, ok := v.(string)
	if !ok {
		r.fail(key, v, "a string")
		return def
	}
	return s
}

// done returns the first bad value, else an error naming the keys that were never read.
func (r *settingsReader) done() error {
	if r.err != nil {
		return r.err
	}
	var unknown, known []string
	for k := range r.s {
		if !r.read[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	for k := range r.read {
		known = append(known, k)
	}
	sort.Strings(unknown)
	sort.Strings(known)
	return fmt.Errorf("unknown setting %s (known: %s)", strings.Join(unknown, ", "), strings.Join(known, ", "))
}
