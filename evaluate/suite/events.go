package suite

import (
	"cmp"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"convrep/evaluate"
	"convrep/tensorboard"
)

// suiteScalars are the suite's rows as TensorBoard scalars: each row's mean, tagged
// eval/<task>/<dataset>/<variant>/<metric> (spaces and slashes within a part made underscores, as a slash
// nests TensorBoard's groups).
func suiteScalars(rows []evaluate.Row) []tensorboard.Scalar {
	part := strings.NewReplacer(" ", "_", "/", "_", "\t", "_")
	var s []tensorboard.Scalar
	for _, r := range rows {
		tag := "eval"
		for _, p := range []string{r.Task, r.Dataset, r.Variant, r.Metric} {
			if p != "" {
				tag += "/" + part.Replace(p)
			}
		}
		s = append(s, tensorboard.Scalar{Tag: tag, Value: float32(r.Mean)})
	}
	return s
}

// writeSuiteEvents puts the suite's rows at step into the event file of dir (the suite's output folder):
// the events of other steps stay, so that suites of a run's checkpoints written to one folder draw a curve;
// those of the same step are replaced. The file is rewritten whole, atomically. It returns the file's path.
func writeSuiteEvents(dir string, step int64, rows []evaluate.Row) (string, error) {
	path, err := tensorboard.Find(dir)
	if err != nil {
		return "", err
	}
	now := time.Now()
	var events []tensorboard.Event
	if path == "" {
		path = filepath.Join(dir, tensorboard.FileName(now))
	} else {
		err := tensorboard.Each(path, func(e tensorboard.Event) error {
			if e.FileVersion == "" && e.Step != step {
				events = append(events, e)
			}
			return nil
		})
		// A damaged file keeps the events before the damage; the rest are gone either way.
		if d := (*tensorboard.DamageError)(nil); err != nil && !errors.As(err, &d) {
			return "", err
		}
	}
	events = append(events, tensorboard.Event{WallTime: float64(now.UnixNano()) / 1e9, Step: step, Scalars: suiteScalars(rows)})
	slices.SortStableFunc(events, func(a, b tensorboard.Event) int { return cmp.Compare(a.Step, b.Step) })
	return path, tensorboard.WriteFile(path, now, events)
}
