package optim

import (
	"math"
	"testing"
)

func TestScheduleFactors(t *testing.T) {
	cases := []struct {
		name  string
		s     Schedule
		steps []int64
		want  []float64
	}{
		{"constant", Constant(), []int64{0, 1, 1000}, []float64{1, 1, 1}},
		{"linear warmup", LinearWarmup(10, 110), []int64{0, 1, 5, 10, 60, 109, 110, 200},
			[]float64{0, 0.1, 0.5, 1, 0.5, 0.01, 0, 0}},
		{"linear no warmup", LinearWarmup(0, 4), []int64{0, 1, 2, 4}, []float64{1, 0.75, 0.5, 0}},
		{"linear warmup = total", LinearWarmup(4, 4), []int64{2, 4, 5}, []float64{0.5, 0, 0}},
		{"constant warmup", ConstantWarmup(4), []int64{0, 1, 4, 100}, []float64{0, 0.25, 1, 1}},
		{"constant warmup 0", ConstantWarmup(0), []int64{0, 7}, []float64{1, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for i, step := range c.steps {
				if got := c.s.Factor(step); math.Abs(got-c.want[i]) > 1e-15 {
					t.Errorf("Factor(%d) = %v, want %v", step, got, c.want[i])
				}
			}
		})
	}
}

func TestParseSchedule(t *testing.T) {
	cases := []struct {
		name          string
		warmup, total int64
		want          Schedule // nil: an error is expected
	}{
		{"constant", 0, 100, Constant()},
		{"Linear", 10, 100, LinearWarmup(10, 100)},
		{"constant_with_warmup", 10, 0, ConstantWarmup(10)},
		{"constant", 10, 100, nil},
		{"linear", 10, 0, nil},
		{"linear", 101, 100, nil},
		{"linear", -1, 100, nil},
		{"cosine", 0, 100, nil},
	}
	for _, c := range cases {
		got, err := ParseSchedule(c.name, c.warmup, c.total)
		if c.want == nil {
			if err == nil {
				t.Errorf("ParseSchedule(%q, %d, %d) gave no error", c.name, c.warmup, c.total)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseSchedule(%q, %d, %d) = %#v, %v; want %#v", c.name, c.warmup, c.total, got, err, c.want)
		}
	}
}
