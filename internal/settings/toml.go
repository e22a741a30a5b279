package settings

// Where things stand in a TOML file, for errors that name the file and the line: the decoder keeps key
// positions private and words some errors without the file.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

var header = regexp.MustCompile(`^\s*\[+\s*([^\]]+?)\s*\]+`)

// KeyLine is the 1-based line of key k in the TOML source src: the first line that assigns the key's last part
// inside the table its other parts name, or the table header itself; 0 when neither is found (a dotted or
// inline key).
func KeyLine(src []byte, k toml.Key) int {
	if len(k) == 0 {
		return 0
	}
	table := strings.Join(k[:len(k)-1], ".")
	leaf := regexp.MustCompile(`^\s*"?` + regexp.QuoteMeta(k[len(k)-1]) + `"?\s*=`)
	current := ""
	for i, line := range strings.Split(string(src), "\n") {
		if m := header.FindStringSubmatch(line); m != nil {
			current = m[1]
			if current == k.String() {
				return i + 1
			}
			continue
		}
		if current == table && leaf.MatchString(line) {
			return i + 1
		}
	}
	return 0
}

var typeErrLine = regexp.MustCompile(`^toml: line (\d+) (.*)$`)

// DecodeError words an error of the TOML decoder reading the file at path as "path:line: problem" (or
// "path: problem" when the error carries no line).
func DecodeError(path string, err error) error {
	var pe toml.ParseError
	var ppe *toml.ParseError
	switch {
	case errors.As(err, &pe):
	case errors.As(err, &ppe):
		pe = *ppe
	default:
		// Type errors are plain errors that carry the line in their text.
		if m := typeErrLine.FindStringSubmatch(err.Error()); m != nil {
			return fmt.Errorf("%s:%s: %s", path, m[1], m[2])
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	return fmt.Errorf("%s:%d: %s", path, pe.Position.Line, pe.Message)
}
