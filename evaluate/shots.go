package evaluate

import (
	"fmt"
	"strings"
)

// LabelRows is a label and a count of its rows: the training rows it has, or the support rows it got.
type LabelRows struct {
	Label string
	Rows  int
}

// rowsPerLabel counts train's rows per label, in order of first appearance.
func rowsPerLabel(train Split) []LabelRows {
	at := map[string]int{}
	var out []LabelRows
	for _, e := range train {
		i, ok := at[e.Label]
		if !ok {
			i = len(out)
			at[e.Label] = i
			out = append(out, LabelRows{Label: e.Label})
		}
		out[i].Rows++
	}
	return out
}

// Shortfall lists, in order of first appearance, the labels of train with fewer than k rows: at k shots their
// support sets hold all their rows, fewer than k.
func Shortfall(train Split, k int) []LabelRows {
	var out []LabelRows
	for _, l := range rowsPerLabel(train) {
		if l.Rows < k {
			out = append(out, l)
		}
	}
	return out
}

// CheckShots refuses a shot count that no label of train can fill (every label has fewer rows than it), naming
// the largest one that can be: the most rows any label has.
func CheckShots(train Split, shots []int) error {
	most := 0
	for _, l := range rowsPerLabel(train) {
		most = max(most, l.Rows)
	}
	for _, k := range shots {
		if k > most {
			return fmt.Errorf("%d-shot: no label has %d training rows (the most any label has is %d), so no support set could hold %d: "+
				"the largest shot count that can be filled is %d", k, k, most, k, most)
		}
	}
	return nil
}

// ShotsUsed is what the support sets of one shot count held, over every seed: the "shots_used" of a result's
// settings. Labels not in Short got the k asked in every seed.
type ShotsUsed struct {
	Min   int            `json:"min"`                    // the fewest support rows of any label in any seed
	Max   int            `json:"max"`                    // the most
	Short map[string]int `json:"short_labels,omitempty"` // labels that got fewer than k in some seed: the fewest they got
}

// UsedShots counts the support rows each of labels got at k over the seeds' support sets; a label missing from
// a seed's sets (a split file may leave it out) got 0 there.
func UsedShots(labels []string, k int, seeds [][]Support) ShotsUsed {
	u := ShotsUsed{Min: -1}
	for _, sets := range seeds {
		got := map[string]int{}
		for _, s := range sets {
			got[s.Label] += len(s.Rows)
		}
		for _, l := range labels {
			n := got[l]
			if u.Min < 0 || n < u.Min {
				u.Min = n
			}
			u.Max = max(u.Max, n)
			if n < k {
				if u.Short == nil {
					u.Short = map[string]int{}
				}
				if prev, ok := u.Short[l]; !ok || n < prev {
					u.Short[l] = n
				}
			}
		}
	}
	u.Min = max(u.Min, 0)
	return u
}

// ShortNote says, for a result's notes, which labels got fewer than k support rows; "" when none did.
func ShortNote(dataset string, k int, labels []string, u ShotsUsed) string {
	if len(u.Short) == 0 {
		return ""
	}
	var short []LabelRows
	for _, l := range labels {
		if n, ok := u.Short[l]; ok {
			short = append(short, LabelRows{l, n})
		}
	}
	return fmt.Sprintf("%s %d-shot: %d of %d labels got fewer than %d support rows (all the training rows they have): %s; "+
		"the rows' settings record them (shots_used)", dataset, k, len(short), len(labels), k, ListLabelRows(short, 20))
}

// ListLabelRows writes labels and counts as `"refund" (3), "cancel" (4)`, the first limit of them, then how
// many more.
func ListLabelRows(ls []LabelRows, limit int) string {
	parts := make([]string, 0, min(len(ls), limit)+1)
	for i, l := range ls {
		if i == limit {
			parts = append(parts, fmt.Sprintf("and %d more", len(ls)-limit))
			break
		}
		parts = append(parts, fmt.Sprintf("%q (%d)", l.Label, l.Rows))
	}
	return strings.Join(parts, ", ")
}
