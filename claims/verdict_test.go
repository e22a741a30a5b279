package claims

import "testing"

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		relation string
		d        float64
		want     Verdict
	}{
		{">", 1.0, Holds},
		{">", 0.8, Holds},
		{">", 0.5, Inconclusive},
		{">", 0, Inconclusive},
		{">", -0.5, Inconclusive},
		{">", -1.0, DoesNotHold},
		{">=", 1.0, Holds},
		{">=", 0.5, Holds},
		{">=", 0, Holds},
		{">=", -0.5, Inconclusive},
		{">=", -0.8, DoesNotHold},
		{">=", -1.0, DoesNotHold},
	} {
		diff := tc.d / 10 // the difference has d's sign
		if got := Judge(tc.relation, diff, tc.d); got != tc.want {
			t.Errorf("%s with d = %v: %q, want %q", tc.relation, tc.d, got, tc.want)
		}
	}
}

func TestAggregate(t *testing.T) {
	for _, tc := range []struct {
		name string
		vs   []Verdict
		want Verdict
		held int
	}{
		{"all hold", []Verdict{Holds, Holds, Holds}, Holds, 3},
		{"none holds", []Verdict{DoesNotHold, DoesNotHold}, DoesNotHold, 0},
		{"mixed", []Verdict{Holds, DoesNotHold, Inconclusive}, PartlyHolds, 1},
		{"none holds, some inconclusive", []Verdict{DoesNotHold, Inconclusive}, Inconclusive, 0},
		{"all inconclusive", []Verdict{Inconclusive, Inconclusive}, Inconclusive, 0},
		{"missing", []Verdict{Holds, Missing, Holds}, Incomplete, 2},
	} {
		got, held := Aggregate(tc.vs)
		if got != tc.want || held != tc.held {
			t.Errorf("%s: %q with %d held, want %q with %d", tc.name, got, held, tc.want, tc.held)
		}
	}
}
