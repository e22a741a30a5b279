package sets

import (
	"fmt"
	"strings"
	"testing"

	"convrep/datasets"

	"convrep/evaluate"
)

func TestMSRIntentLabel(t *testing.T) {
	for _, tc := range []struct {
		name string
		acts []string
		want string
		err  string
	}{
		{"slots with values", []string{"request(moviename;genre=foreign;city=Houma;state=Louisiana;date=this week)"}, "request(city;date;genre;moviename;state)", ""},
		{"acts sorted", []string{"request(taxi;date=today)", "greeting(greeting=Hi)"}, "greeting(greeting)+request(date;taxi)", ""},
		{"no slots", []string{"thanks()"}, "thanks()", ""},
		{"case, spaces, empty items", []string{" Not_Sure( ) ", "inform(City= Seattle ; ;Date=tonight;)"}, "inform(city;date)+not_sure()", ""},
		{"one act name in two columns merged", []string{"inform(date=today)", "inform(city=x;date=y)"}, "inform(city;date)", ""},
		{"repeated slot once", []string{"inform(date=a;date=b)"}, "inform(date)", ""},
		{"parentheses in a value", []string{"inform(date=tomorrow (3/17);pickup_time=9pm)"}, "inform(date;pickup_time)", ""},
		{"a dash typed for =", []string{"inform(date-tomorrow)"}, "inform(date-tomorrow)", ""},
		{"no acts", nil, "", ""},
		{"no parenthesis", []string{"inform"}, "", `"inform" is not name(slot=value;...)`},
		{"unclosed", []string{"inform(city=x"}, "", "is not name(slot=value;...)"},
		{"empty name", []string{"(city=x)"}, "", `act name ""`},
		{"bad name", []string{"in form(city=x)"}, "", `act name "in form"`},
		{"bad slot", []string{"inform(city of=x)"}, "", `slot name "city of"`},
		{"long act clipped", []string{"inform(" + strings.Repeat("x y", 100) + ")"}, "", "…"},
	} {
		got, err := MSRIntentLabel(tc.acts)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || len(err.Error()) > 300 {
				t.Errorf("%s: error %v, want a short one containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

func msg(text string, acts ...string) datasets.MSRUserMessage {
	return datasets.MSRUserMessage{Source: "x.zip!taxi_all.tsv", Line: 7, Session: "3", Text: text, Acts: acts}
}

// The pool keeps messages of at least 3 words with acts, once per text at its first place; texts whose
// copies disagree on the label are dropped; a malformed act names the file and the line.
func TestBuildSRPool(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []datasets.MSRUserMessage
		want string // texts=labels
		left string // Messages Short Unlabelled Repeats Conflicting
		err  string
	}{
		{"kept in order", []datasets.MSRUserMessage{msg("book a cab now", "request(taxi)"), msg("two of us please", "inform(numberofpeople=2)")},
			"[book a cab now=request(taxi) two of us please=inform(numberofpeople)]", "2 0 0 0 0", ""},
		{"short and unlabelled", []datasets.MSRUserMessage{msg("yes please", "confirm_answer()"), msg("hello there you"), msg("ok it is fine", "thanks()")},
			"[ok it is fine=thanks()]", "3 1 1 0 0", ""},
		{"repeat with the same label", []datasets.MSRUserMessage{msg("a b c", "thanks()"), msg("d e f", "closing()"), msg("a b c", " Thanks( ; ) ")},
			"[a b c=thanks() d e f=closing()]", "3 0 0 1 0", ""},
		{"repeats that disagree are dropped", []datasets.MSRUserMessage{msg("a b c", "thanks()"), msg("d e f", "closing()"), msg("a b c", "closing()"), msg("a b c", "thanks()")},
			"[d e f=closing()]", "4 0 0 2 1", ""},
		{"malformed act", []datasets.MSRUserMessage{msg("a b c", "thanks")}, "", "", "x.zip!taxi_all.tsv: line 7 (session 3): dialogue act"},
		{"nothing left", []datasets.MSRUserMessage{msg("a b", "thanks()")}, "", "", "no user message of at least 3 words"},
	} {
		p, err := BuildSRPool(tc.msgs, "x.zip")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for i := range p.Texts {
			got = append(got, p.Texts[i]+"="+p.Labels[i])
		}
		left := fmt.Sprint(p.Messages, p.Short, p.Unlabelled, p.Repeats, p.Conflicting)
		if fmt.Sprint(got) != tc.want || left != tc.left || p.Dataset != "msr_e2e" {
			t.Errorf("%s: pool %v, counts %s; want %s, %s", tc.name, got, left, tc.want, tc.left)
		}
	}
}

func TestSRLabelStats(t *testing.T) {
	p := &evaluate.SRPool{Labels: []string{"b", "a", "b", "c", "a"}}
	got := p.LabelStats()
	want := evaluate.SRLabelStats{Labels: 3, Singletons: 1, Largest: "a", Share: 0.4} // a and b tie at 2: the first in sorted order
	if got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
}

// Whatever the acts, MSRIntentLabel does not panic, keeps its errors short, and gives a label that does not
// depend on the order of the act columns.
func FuzzMSRIntentLabel(f *testing.F) {
	f.Add("request(moviename;genre=foreign)", "greeting(greeting=hi)")
	f.Add("inform(date=tomorrow (3/17);pickup_time=9pm)", "Not_Sure()")
	f.Add("inform(", ")x(")
	f.Fuzz(func(t *testing.T, a, b string) {
		ab, err := MSRIntentLabel([]string{a, b})
		if err != nil {
			if len(err.Error()) > 400 {
				t.Fatalf("an error of %d bytes", len(err.Error()))
			}
			return
		}
		ba, err := MSRIntentLabel([]string{b, a})
		if err != nil || ab != ba {
			t.Fatalf("%q then %q: %q; the other order: %q, %v", a, b, ab, ba, err)
		}
	})
}
