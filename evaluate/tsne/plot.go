package tsne

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"

	"convrep/internal/atomicfile"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The PNG that PlotPNG writes: PlotSizeInches square at PlotDPI, i.e. PlotPixels × PlotPixels.
const (
	PlotSizeInches = 8
	PlotDPI        = 150
	PlotPixels     = PlotSizeInches * PlotDPI
)

// Point radii: small, since thousands of points share the plot; black ones a little larger so that the
// out-of-scope queries read as circles over the coloured clusters, as in the DSE paper's Figure 1.
const (
	pointRadius = vg.Length(1.3)
	blackRadius = vg.Length(1.6)
)

// PlotPNG draws pts as a scatter plot at path (a PNG, written atomically): one colour per label, the
// points labelled black (unless black is empty) drawn last in black, no legend, and title followed by the
// number of labels.
// Colours are assigned to the labels in sorted order, so a label set always gets the same colours.
func PlotPNG(path string, pts [][2]float64, labels []string, black string, title string) error {
	if len(pts) == 0 {
		return fmt.Errorf("plot %s: no points", path)
	}
	if len(pts) != len(labels) {
		return fmt.Errorf("plot %s: %d points but %d labels", path, len(pts), len(labels))
	}
	for i, p := range pts {
		if math.IsNaN(p[0]+p[1]) || math.IsInf(p[0]+p[1], 0) {
			return fmt.Errorf("plot %s: point %d is %v", path, i, p)
		}
	}
	var coloured, dark plotter.XYs
	var colours []color.Color // per coloured point
	index := labelColours(labels, black)
	nBlack := 0
	for i, p := range pts {
		if black != "" && labels[i] == black {
			dark = append(dark, plotter.XY{X: p[0], Y: p[1]})
			nBlack++
			continue
		}
		coloured = append(coloured, plotter.XY{X: p[0], Y: p[1]})
		colours = append(colours, index[labels[i]])
	}

	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s (%d labels)", title, len(index))
	if nBlack > 0 {
		p.Title.Text = fmt.Sprintf("%s (%d labels; %d %q in black)", title, len(index), nBlack, black)
	}
	p.HideAxes() // t-SNE coordinates carry no units
	if len(coloured) > 0 {
		s, err := plotter.NewScatter(coloured)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		s.GlyphStyleFunc = func(i int) draw.GlyphStyle {
			return draw.GlyphStyle{Color: colours[i], Radius: pointRadius, Shape: draw.CircleGlyph{}}
		}
		p.Add(s)
	}
	if len(dark) > 0 {
		s, err := plotter.NewScatter(dark)
		if err != nil {
			return fmt.Errorf("plot %s: %w", path, err)
		}
		s.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: blackRadius, Shape: draw.CircleGlyph{}}
		p.Add(s)
	}

	c := vgimg.NewWith(vgimg.UseWH(PlotSizeInches*vg.Inch, PlotSizeInches*vg.Inch), vgimg.UseDPI(PlotDPI))
	p.Draw(draw.New(c))
	err := atomicfile.Write(path, func(w io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: c}.WriteTo(w)
		return err
	})
	if err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// labelColours gives each distinct label other than black (if not empty) its palette colour, in sorted
// label order.
func labelColours(labels []string, black string) map[string]color.Color {
	var names []string
	seen := map[string]bool{}
	for _, l := range labels {
		if !seen[l] && (black == "" || l != black) {
			seen[l] = true
			names = append(names, l)
		}
	}
	slices.Sort(names)
	cols := palette(len(names))
	out := make(map[string]color.Color, len(names))
	for k, l := range names {
		out[l] = cols[k]
	}
	return out
}
