package settings

import "testing"

type color string

const (
	red      color = "red"
	darkBlue color = "dark_blue"
)

func TestOneOf(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want color
		err  string
	}{
		{in: "red", want: red},
		{in: " Dark_Blue\t", want: darkBlue},
		{in: "RED", want: red},
		{in: "", err: `color "" is not one of red, dark_blue`},
		{in: "dark blue", err: `color "dark blue" is not one of red, dark_blue`},
		{in: " Green ", err: `color " Green " is not one of red, dark_blue`},
	} {
		got, err := OneOf("color", tc.in, red, darkBlue)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("OneOf(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}
