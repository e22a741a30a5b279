package claims

// LargeEffect is the effect size (Cohen's d) from which a difference counts: 0.8, "a large effect" (Cohen
// 1988, Statistical Power Analysis for the Behavioral Sciences). Smaller differences are within the spread
// over seeds.
const LargeEffect = 0.8

// Verdict is the outcome of a comparison or of a claim.
type Verdict string

// A comparison is Holds, DoesNotHold, Inconclusive or Missing; a claim can also be PartlyHolds, and is
// Incomplete while any of its comparisons is Missing.
const (
	Holds        Verdict = "holds"
	DoesNotHold  Verdict = "does not hold"
	Inconclusive Verdict = "inconclusive"
	Missing      Verdict = "missing"
	PartlyHolds  Verdict = "partly holds"
	Incomplete   Verdict = "incomplete"
)

// Judge decides a comparison from the difference of the means (better − worse) and Cohen's d.
//
//	">":  holds when d ≥ LargeEffect, does not hold when d ≤ −LargeEffect, inconclusive otherwise
//	">=": does not hold when d ≤ −LargeEffect, holds when diff ≥ 0, inconclusive otherwise (−LargeEffect < d < 0)
//
// Any other relation (which Validate refuses) is Inconclusive.
func Judge(relation string, diff, d float64) Verdict {
	switch {
	case d <= -LargeEffect:
		return DoesNotHold
	case relation == ">" && d >= LargeEffect:
		return Holds
	case relation == ">=" && diff >= 0:
		return Holds
	}
	return Inconclusive
}

// Aggregate decides a claim from its comparisons' verdicts, and counts those that hold: Incomplete when any
// is Missing, Holds when all hold, DoesNotHold when none holds and all do not, PartlyHolds when some hold,
// Inconclusive otherwise.
func Aggregate(vs []Verdict) (v Verdict, held int) {
	var notHeld, missing int
	for _, x := range vs {
		switch x {
		case Holds:
			held++
		case DoesNotHold:
			notHeld++
		case Missing:
			missing++
		}
	}
	switch {
	case missing > 0:
		return Incomplete, held
	case len(vs) == 0:
		return Inconclusive, 0
	case held == len(vs):
		return Holds, held
	case notHeld == len(vs):
		return DoesNotHold, held
	case held > 0:
		return PartlyHolds, held
	}
	return Inconclusive, held
}
