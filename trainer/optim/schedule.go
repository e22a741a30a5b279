package optim

import (
	"fmt"
	"strings"
)

// Schedule gives the multiplier on each group's base learning rate for the optimiser step about to be
// taken, step being the number of steps already taken (Optimizer.StepCount): the first update uses
// Factor(0). This is how HuggingFace's LambdaLR schedules count.
type Schedule interface {
	Factor(step int64) float64
}

// Constant keeps the base learning rate.
func Constant() Schedule { return constant{} }

type constant struct{}

func (constant) Factor(int64) float64 { return 1 }

// ConstantWarmup rises linearly from 0 to 1 over warmup steps, then stays at 1
// (HuggingFace's get_constant_schedule_with_warmup).
func ConstantWarmup(warmup int64) Schedule { return constantWarmup{warmup} }

type constantWarmup struct{ warmup int64 }

func (s constantWarmup) Factor(step int64) float64 {
	if step < s.warmup {
		return float64(step) / float64(max(1, s.warmup))
	}
	return 1
}

// LinearWarmup rises linearly from 0 to 1 over warmup steps, then falls linearly to 0 at step total and
// stays there (HuggingFace's get_linear_schedule_with_warmup, same formula and same divisions).
func LinearWarmup(warmup, total int64) Schedule { return linearWarmup{warmup, total} }

type linearWarmup struct{ warmup, total int64 }

func (s linearWarmup) Factor(step int64) float64 {
	if step < s.warmup {
		return float64(step) / float64(max(1, s.warmup))
	}
	return max(0, float64(s.total-step)/float64(max(1, s.total-s.warmup)))
}

// ParseSchedule builds a schedule by its HuggingFace name: "constant", "constant_with_warmup" or "linear".
// warmup and total are in optimiser steps. A warmup given to "constant" is refused rather than ignored, so
// that a configuration asking for warmup gets it or an error.
func ParseSchedule(name string, warmup, total int64) (Schedule, error) {
	if warmup < 0 || total < 0 {
		return nil, fmt.Errorf("optim: schedule %q: warmup %d and total %d must not be negative", name, warmup, total)
	}
	switch strings.ToLower(name) {
	case "constant":
		if warmup != 0 {
			return nil, fmt.Errorf("optim: schedule %q takes no warmup (got %d); use \"constant_with_warmup\"", name, warmup)
		}
		return Constant(), nil
	case "constant_with_warmup":
		return ConstantWarmup(warmup), nil
	case "linear":
		if total == 0 || warmup > total {
			return nil, fmt.Errorf("optim: schedule %q: needs 0 ≤ warmup ≤ total and total > 0, got warmup %d, total %d",
				name, warmup, total)
		}
		return LinearWarmup(warmup, total), nil
	}
	return nil, fmt.Errorf("optim: unknown schedule %q (want constant, constant_with_warmup or linear)", name)
}
