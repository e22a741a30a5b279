package sets

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

func TestParsePyLiteral(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
	}{
		{`'abc'`, "abc"},
		{`"it's"`, "it's"},
		{`'it\'s \\ "q"'`, `it's \ "q"`},
		{`'a\nb\tc\r\a\b\f\v'`, "a\nb\tc\r\a\b\f\v"},
		{`'\x41\u00e9\U0001F600\101\0'`, "Aé😀A\x00"},
		{"'caf\u00e9'", "café"},
		{`''`, ""},
		{`42`, int64(42)},
		{`-7`, int64(-7)},
		{`0`, int64(0)},
		{`00`, int64(0)},
		{`1415088000`, int64(1415088000)},
		{`1.5`, 1.5},
		{`-.5`, -0.5},
		{`5.`, 5.0},
		{`1e3`, 1000.0},
		{`2.5E-1`, 0.25},
		{`True`, true},
		{`False`, false},
		{`None`, nil},
		{`[]`, []any{}},
		{`[1, 'a', [None]]`, []any{int64(1), "a", []any{nil}}},
		{`[1, 2,]`, []any{int64(1), int64(2)}},
		{`{}`, map[string]any{}},
		{` { 'a' : 1 , "b": {'c': [True]}, } `, map[string]any{"a": int64(1), "b": map[string]any{"c": []any{true}}}},
		{`{'a': 1, 'a': 2}`, map[string]any{"a": int64(2)}},
		{"{'a':\n 1}", map[string]any{"a": int64(1)}},
		{`{'question': 'Will it work?', 'answerType': 'Y', 'unixTime': 1417248000, 'answer': "It's fine"}`,
			map[string]any{"question": "Will it work?", "answerType": "Y", "unixTime": int64(1417248000), "answer": "It's fine"}},
	} {
		got, err := ParsePyLiteral(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

func TestParsePyLiteralErrors(t *testing.T) {
	for _, tc := range []struct{ in, errHas string }{
		{``, "end of input"},
		{`'abc`, "unterminated string"},
		{`'a` + "\n" + `b'`, "newline inside a string"},
		{`'\q'`, `unknown escape \q`},
		{`'\x4'`, "malformed"},
		{`'\ud800'`, "not a Unicode scalar value"},
		{`'\U00110000'`, "not a Unicode scalar value"},
		{`'''a'''`, "triple-quoted"},
		{`u'a'`, "unexpected"},
		{`(1, 2)`, "unexpected"},
		{`{1: 2}`, "dict key must be a string"},
		{`{'a' 1}`, "want ':'"},
		{`[1 2]`, "want ','"},
		{`[1,,2]`, "unexpected ','"},
		{`[1`, "end of input"},
		{`{'a': 1`, "end of input"},
		{`'a' 'b'`, "after the value"},
		{`Nonesuch`, "unexpected"},
		{`true`, "unexpected"},
		{`012`, "leading zero"},
		{`-`, "malformed number"},
		{`.`, "malformed number"},
		{`1e`, "malformed exponent"},
		{`12abc`, "malformed number"},
		{`99999999999999999999`, "int64"},
		{`1e999`, "out of range"},
		{"'\xff'", "invalid UTF-8"},
		{strings.Repeat("[", 600) + strings.Repeat("]", 600), "nested deeper"},
	} {
		_, err := ParsePyLiteral(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.errHas) || !strings.Contains(err.Error(), "column ") {
			t.Errorf("%q: error %v, want one naming a column and holding %q", tc.in, err, tc.errHas)
		}
	}
}

// formatPy writes v as a Python literal that ParsePyLiteral reads back to the same value.
func formatPy(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return s
	case string:
		var b strings.Builder
		b.WriteByte('\'')
		for _, r := range x {
			switch {
			case r == '\'' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			case r < 0x20 || r == 0x7f:
				fmt.Fprintf(&b, `\x%02x`, r)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('\'')
		return b.String()
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = formatPy(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = formatPy(k) + ": " + formatPy(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	panic(fmt.Sprintf("formatPy: %T", v))
}

// FuzzParsePyLiteral checks that the parser never panics and that whatever it accepts survives a round trip
// through formatPy unchanged.
func FuzzParsePyLiteral(f *testing.F) {
	for _, s := range []string{
		`{'questionType': 'yes/no', 'asin': 'B00000K4MC', 'unixTime': 1415088000, 'question': 'Will it work?', 'answer': "It's \\ ok"}`,
		`[1, -2.5e3, None, True, False, '\x41\u00e9\U0001F600\101', {"k": []}]`,
		`'\q'`, `{1: 2}`, `012`, `"a\
b"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParsePyLiteral(s)
		if err != nil {
			if !strings.Contains(err.Error(), "column ") {
				t.Fatalf("%q: error %v does not name a column", s, err)
			}
			return
		}
		text := formatPy(v)
		w, err := ParsePyLiteral(text)
		if err != nil {
			t.Fatalf("%q parsed to %#v, whose formatting %q does not parse: %v", s, v, text, err)
		}
		if !reflect.DeepEqual(v, w) {
			t.Fatalf("%q: round trip changed %#v into %#v", s, v, w)
		}
	})
}
