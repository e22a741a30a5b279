package objectives

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"convrep/internal/settings"
)

// Settings is the [objective] table of an experiment file as the TOML decoder gives it (numbers as int64 or
// float64). Each objective's parser reads it strictly: a key it does not know is an error naming the key, so a typo
// cannot silently fall back to a default.
type Settings map[string]any

// SettingsReader reads typed values out of Settings, remembering the first error and the keys read.
type SettingsReader struct {
	s    Settings
	read map[string]bool
	err  error
}

// Reader starts reading s; Done then names the first bad value or the keys never read.
func (s Settings) Reader() *SettingsReader { return &SettingsReader{s: s, read: map[string]bool{}} }

func (r *SettingsReader) fail(key string, v any, want string) {
	if r.err == nil {
		r.err = fmt.Errorf("setting %s = %v (%T): want %s", key, v, v, want)
	}
}

// Number reads a finite number, def when the key is absent.
func (r *SettingsReader) Number(key string, def float64) float64 {
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

// Integer reads a whole number, def when the key is absent.
func (r *SettingsReader) Integer(key string, def int64) int64 {
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

// Text reads a string, def when the key is absent.
func (r *SettingsReader) Text(key, def string) string { return readAs(r, key, def, "a string") }

// Bool reads true or false, def when the key is absent.
func (r *SettingsReader) Bool(key string, def bool) bool { return readAs(r, key, def, "true or false") }

// readAs reads a value the decoder gives as a T, def when the key is absent; want names T in the error.
func readAs[T any](r *SettingsReader, key string, def T, want string) T {
	r.read[key] = true
	v, ok := r.s[key]
	if !ok {
		return def
	}
	x, ok := v.(T)
	if !ok {
		r.fail(key, v, want)
		return def
	}
	return x
}

// Done returns the first bad value, else an error naming the keys that were never read.
func (r *SettingsReader) Done() error {
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
	hint := ""
	if near, ok := settings.Nearest(unknown[0], known); ok && len(unknown) == 1 {
		hint = fmt.Sprintf("did you mean %s? ", near)
	}
	return fmt.Errorf("unknown setting %s (%sknown: %s)", strings.Join(unknown, ", "), hint, strings.Join(known, ", "))
}

// Value reads a key as the decoder gave it, for a setting of several types (FutureTOD's max_future).
func (r *SettingsReader) Value(key string) (any, bool) {
	r.read[key] = true
	v, ok := r.s[key]
	return v, ok
}
