package datacmd

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/sugarme/gotch"

	"convrep/objectives"
)

// lenOnly is a dataset that reports nothing; reporting adds a report.
type lenOnly struct{ n int }

func (d lenOnly) Len() int                                          { return d.n }
func (lenOnly) Batch([]int, gotch.Device) (objectives.Batch, error) { return objectives.Batch{}, nil }

type reporting struct {
	lenOnly
	report any
}

func (d reporting) Report() any { return d.report }

// data prepare's line holds the dataset's report, its fields first, then the process's; a dataset without a
// report gives its example count.
func TestPrepareReport(t *testing.T) {
	type mgtLike struct {
		Examples, Pool    int
		SegmentSimilarity []float64
		PoolMiB           float64
	}
	for _, tc := range []struct {
		name string
		data objectives.Dataset
		want []string // the keys, in order
	}{
		{"no report", lenOnly{7}, []string{"Examples", "PeakRSSMiB", "GoHeapMiB", "Workers"}},
		{"report", reporting{lenOnly{7}, mgtLike{Examples: 3, Pool: 2, SegmentSimilarity: []float64{0.5}, PoolMiB: 1.5}},
			[]string{"Examples", "Pool", "SegmentSimilarity", "PoolMiB", "PeakRSSMiB", "GoHeapMiB", "Workers"}},
		{"empty report", reporting{lenOnly{7}, struct{}{}}, []string{"PeakRSSMiB", "GoHeapMiB", "Workers"}},
	} {
		line, err := prepareReport(tc.data)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got map[string]any
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("%s: %s: %v", tc.name, line, err)
		}
		keys, err := objectKeys(line)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != len(tc.want) {
			t.Errorf("%s: %s, want the keys %q", tc.name, line, tc.want)
			continue
		}
		for i := range keys {
			if keys[i] != tc.want[i] {
				t.Errorf("%s: %s, want the keys %q", tc.name, line, tc.want)
				break
			}
		}
		if got["Workers"].(float64) < 1 || got["PeakRSSMiB"].(float64) <= 0 {
			t.Errorf("%s: %s: no process figures", tc.name, line)
		}
	}
	if line, _ := prepareReport(lenOnly{7}); string(line[:14]) != `{"Examples":7,` {
		t.Errorf("%s, want Examples 7 first", line)
	}
	if _, err := prepareReport(reporting{lenOnly{1}, 3}); err == nil {
		t.Error("a report that is no JSON object was accepted")
	}
}

// objectKeys returns the keys of a JSON object in the order written.
func objectKeys(b []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var keys []string
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
	}
	return keys, nil
}
