// Package tomlpos finds where a key stands in a TOML file, for errors that name the line: the decoder keeps
// positions private.
package tomlpos

import (
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
