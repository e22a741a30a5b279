package trainer

import (
	"fmt"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"convrep/rundir"
)

// plotLoss draws metrics.jsonl's loss against the step as loss.png in the output folder.
func plotLoss(out, title string) (string, error) {
	ms, err := readMetrics(rundir.At(out).MetricsPath())
	if err != nil {
		return "", err
	}
	if len(ms) == 0 {
		return "", fmt.Errorf("no metrics to plot")
	}
	pts := make(plotter.XYs, len(ms))
	for i, m := range ms {
		pts[i].X, pts[i].Y = float64(m.Step), m.Loss
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "step"
	p.Y.Label.Text = "training loss"
	p.Add(plotter.NewGrid())
	line, err := plotter.NewLine(pts)
	if err != nil {
		return "", err
	}
	p.Add(line)
	path := rundir.At(out).LossPlotPath()
	if err := p.Save(8*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return "", fmt.Errorf("plot loss: %w", err)
	}
	return path, nil
}
