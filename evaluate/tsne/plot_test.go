package tsne

import (
	"fmt"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlotPNG(t *testing.T) {
	dir := t.TempDir()
	var pts [][2]float64
	var labels []string
	for c := 0; c < 150; c++ { // 150 intents on a circle
		for m := 0; m < 5; m++ {
			a := 2 * math.Pi * float64(c) / 150
			pts = append(pts, [2]float64{50*math.Cos(a) + float64(m)*0.1, 50*math.Sin(a) + float64(m)*0.1})
			labels = append(labels, fmt.Sprintf("intent%03d", c))
		}
	}
	for m := 0; m < 100; m++ { // out-of-scope in the middle
		pts = append(pts, [2]float64{float64(m%10) - 5, float64(m/10) - 5})
		labels = append(labels, "oos")
	}
	path := filepath.Join(dir, "tsne.png")
	if err := os.WriteFile(path, []byte("an older plot"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := PlotPNG(path, pts, labels, "oos", "CLINC150 test"); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() != PlotPixels || b.Dy() != PlotPixels {
		t.Errorf("image is %d×%d, want %d×%d", b.Dx(), b.Dy(), PlotPixels, PlotPixels)
	}
	// The centre holds the black out-of-scope points; the circle holds coloured ones.
	black, coloured := 0, 0
	b := img.Bounds()
	for yy := b.Min.Y; yy < b.Max.Y; yy++ {
		for xx := b.Min.X; xx < b.Max.X; xx++ {
			r, g, bl, _ := img.At(xx, yy).RGBA()
			switch {
			case r < 0x1000 && g < 0x1000 && bl < 0x1000:
				black++
			case max(r, g, bl)-min(r, g, bl) > 0x4000:
				coloured++
			}
		}
	}
	if black < 500 || coloured < 2000 {
		t.Errorf("%d black and %d coloured pixels; want the out-of-scope and intent points drawn", black, coloured)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries after the write, want only the plot", len(entries))
	}
}

func TestPlotPNGRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name   string
		path   string
		pts    [][2]float64
		labels []string
		want   string
	}{
		{"no points", filepath.Join(dir, "a.png"), nil, nil, "no points"},
		{"labels short", filepath.Join(dir, "b.png"), [][2]float64{{0, 0}, {1, 1}}, []string{"a"}, "2 points but 1 labels"},
		{"NaN point", filepath.Join(dir, "c.png"), [][2]float64{{0, math.NaN()}}, []string{"a"}, "point 0"},
		{"missing folder", filepath.Join(dir, "no", "d.png"), [][2]float64{{0, 0}}, []string{"a"}, "d.png"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := PlotPNG(c.path, c.pts, c.labels, "oos", "t")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// TestPaletteTellsLabelsApart checks that 150 labels get 150 colours, none close to another (in CIELAB)
// or to the black of the out-of-scope points and the white background, and that the palette for fewer
// labels is a prefix of it.
func TestPaletteTellsLabelsApart(t *testing.T) {
	const n = 150
	cols := palette(n)
	black, white := toLab(color.RGBA{A: 255}), toLab(color.RGBA{R: 255, G: 255, B: 255, A: 255})
	minDist := math.Inf(1)
	for a := 0; a < n; a++ {
		la := toLab(cols[a])
		if d := min(labDist(la, black), labDist(la, white)); d < 20 {
			t.Errorf("colour %d %v is %.1f ΔE from black or white", a, cols[a], d)
		}
		for b := a + 1; b < n; b++ {
			minDist = min(minDist, labDist(la, toLab(cols[b])))
		}
	}
	if minDist < 10 {
		t.Errorf("closest two of %d colours are %.1f ΔE apart, want ≥ 10", n, minDist)
	}
	for k, c := range palette(20) {
		if c != cols[k] {
			t.Errorf("colour %d is %v among 20, %v among 150", k, c, cols[k])
		}
	}
	if lab := toLab(color.RGBA{R: 255, A: 255}); math.Abs(lab[0]-53.24) > 0.05 || math.Abs(lab[1]-80.09) > 0.05 || math.Abs(lab[2]-67.20) > 0.05 {
		t.Errorf("sRGB red is %v in CIELAB, want (53.24, 80.09, 67.20)", lab)
	}
}

// TestLabelColoursStable checks that a label's colour depends on the label set, not on point order.
func TestLabelColoursStable(t *testing.T) {
	a := labelColours([]string{"b", "a", "oos", "c", "a"}, "oos")
	b := labelColours([]string{"c", "oos", "a", "b"}, "oos")
	if len(a) != 3 || a["oos"] != nil {
		t.Fatalf("colours %v: want 3 labels and none for the black one", a)
	}
	for l, c := range a {
		if b[l] != c {
			t.Errorf("label %q: %v in one order, %v in another", l, c, b[l])
		}
	}
}
