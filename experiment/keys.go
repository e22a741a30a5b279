package experiment

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"

	"convrep/internal/settings"
)

// tables maps each table of an experiment file ("" for the top level, "model", "model.random", ...) to the
// keys and sub-tables it holds, read from the toml tags of Experiment.
var tables = tablesOf(reflect.TypeFor[Experiment](), "", map[string][]string{})

func tablesOf(t reflect.Type, table string, into map[string][]string) map[string][]string {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if name == "" || name == "-" {
			continue
		}
		into[table] = append(into[table], name)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			tablesOf(ft, strings.TrimPrefix(table+"."+name, "."), into)
		}
	}
	return into
}

// unknownKey words an unknown key, with the known key nearest to it when one is a plausible slip:
// `unknown key "train.batch_sise" (did you mean "train.batch_size"?)`.
func unknownKey(k toml.Key) string {
	msg := fmt.Sprintf("unknown key %q", k.String())
	if near := nearestKey(k); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return msg
}

// nearestKey is k with its first unknown part replaced by the nearest name its table holds, "" when none is
// near enough.
func nearestKey(k toml.Key) string {
	table := ""
	for i, part := range k {
		names, ok := tables[table]
		if !ok {
			return "" // inside a key that is no table (the objective's own table, a value)
		}
		next := strings.TrimPrefix(table+"."+part, ".")
		if _, isTable := tables[next]; isTable {
			table = next
			continue
		}
		near, ok := settings.Nearest(part, names)
		if !ok || near == part {
			return ""
		}
		fixed := append(append(toml.Key{}, k[:i]...), near)
		return append(fixed, k[i+1:]...).String()
	}
	return ""
}

// typeErr is the decoder's wording of a value of the wrong type.
var typeErr = regexp.MustCompile(`^toml: line \d+ \(last key "([^"]+)"\): incompatible types: TOML value has type (\S+); destination has type (\S+)$`)

// setError words an error of decoding the --set value o: the key and the type it wants, not the line of the
// one-key document applyOverride decoded (a line the user never wrote).
func setError(o, value string, err error) error {
	if m := typeErr.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("--set %s: %s takes %s, got %s %s", o, m[1], typeName(m[3]), typeName(m[2]), value)
	}
	msg := err.Error()
	var pe toml.ParseError
	var ppe *toml.ParseError
	switch {
	case errors.As(err, &pe):
		msg = pe.Message
	case errors.As(err, &ppe):
		msg = ppe.Message
	}
	return fmt.Errorf("--set %s: %s", o, strings.TrimPrefix(msg, "toml: "))
}

// typeName is a type as the decoder names it ("integer", "*bool", "[]string", "[]any"), in words.
func typeName(t string) string {
	t = strings.TrimPrefix(t, "*")
	switch {
	case t == "integer" || t == "int64" || t == "int":
		return "an integer"
	case t == "float" || t == "float64":
		return "a number"
	case t == "bool" || t == "boolean":
		return "true or false"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map"):
		return "a table"
	}
	return t
}
