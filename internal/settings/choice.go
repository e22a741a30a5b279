// Package settings reads what people write in a setting, a flag or an experiment file: a value that names one of
// a few choices (OneOf), the nearest known name for a "did you mean" (Nearest), and where a key or an error
// stands in a TOML file (KeyLine, DecodeError).
package settings

import (
	"fmt"
	"slices"
	"strings"
)

// OneOf reads s as one of choices, which are written in lower case: case-insensitively, spaces around it
// ignored ("HardNeg" is hardneg). Anything else is an error that names the setting (what) and the choices in
// their order, such as `contrastive mode "hard" is not one of hardneg, orig`.
func OneOf[T ~string](what, s string, choices ...T) (T, error) {
	if v := T(strings.ToLower(strings.TrimSpace(s))); slices.Contains(choices, v) {
		return v, nil
	}
	names := make([]string, len(choices))
	for i, c := range choices {
		names[i] = string(c)
	}
	return "", fmt.Errorf("%s %q is not one of %s", what, s, strings.Join(names, ", "))
}
