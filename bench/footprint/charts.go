package main

import (
	"fmt"
	"github.com/idlemux/idlemux/bench/footprint/internal/lab"
	"image/color"
	"io"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// steppingColor gives every stepping policy the same colour in every chart.
var steppingColor = map[string]color.Color{
	"off":     color.RGBA{R: 0x33, G: 0x33, B: 0x33, A: 0xff},
	"naive":   color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	"runtime": color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
}

// gcShapes give every GC setting a glyph in the peak-vs-wall chart.
var gcShapes = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}

// drawCharts writes, for every workload, rss-WORKLOAD and
// peak-vs-wall-WORKLOAD (peak-vs-cpu-WORKLOAD for a workload of fixed
// duration) as PNG and SVG into dir.
func drawCharts(dir string, rep *report) error {
	for _, a := range rep.About {
		if err := rssChart(dir, a.Name, rep); err != nil {
			return err
		}
		if err := peakCostChart(dir, a.Name, rep); err != nil {
			return err
		}
	}
	return nil
}

// costName says what a workload's cost is measured in: wall time, or CPU
// time for a workload that runs for a set time whatever the policy.
func costName(workload string) string {
	if w, ok := lab.FindWorkload(workload); ok && w.FixedDuration {
		return "cpu"
	}
	return "wall"
}

// rssChart draws RSS over time, one panel per GC setting and one line per
// stepping policy, from the first round.
func rssChart(dir, workload string, rep *report) error {
	var gcs []string
	for _, s := range rep.Summary {
		if s.Workload == workload && (len(gcs) == 0 || gcs[len(gcs)-1] != s.GC) {
			gcs = append(gcs, s.GC)
		}
	}
	if len(gcs) == 0 {
		return nil
	}
	cols := min(2, len(gcs))
	rows := (len(gcs) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, gc := range gcs {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s, %s", workload, gc)
		p.X.Label.Text = "seconds"
		p.Y.Label.Text = "RSS (MiB)"
		p.Y.Min = 0
		p.Add(plotter.NewGrid())
		// The legend sits at the top; leave it room above the lines.
		p.Legend.Top = true
		var top float64
		for _, r := range rep.Runs {
			if r.Workload == workload && r.Condition() == gc && r.Round == 0 {
				top = max(top, mib(r.PeakRSS))
			}
		}
		p.Y.Max = top * 1.4
		for _, st := range lab.Steppings {
			for _, r := range rep.Runs {
				if r.Workload != workload || r.Condition() != gc || r.Stepping != st || r.Round != 0 || len(r.Samples) == 0 {
					continue
				}
				xy := make(plotter.XYs, len(r.Samples))
				for j, s := range r.Samples {
					xy[j].X, xy[j].Y = s.T, mib(s.RSS)
				}
				l, err := plotter.NewLine(xy)
				if err != nil {
					return err
				}
				l.Color = steppingColor[st]
				l.Width = vg.Points(1.5)
				p.Add(l)
				p.Legend.Add(fmt.Sprintf("stepping=%s (peak %.1f MiB, %.2fs)", st, mib(r.PeakRSS), r.Wall), l)
				break
			}
		}
		plots[i/cols][i%cols] = p
	}
	w, h := vg.Length(cols)*5.5*vg.Inch, vg.Length(rows)*3.6*vg.Inch
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Inch / 4, PadY: vg.Inch / 4,
		PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	return saveBoth(dir, "rss-"+workload, w, h, func(dc draw.Canvas) {
		canvases := plot.Align(plots, tiles, dc)
		for i := range plots {
			for j, p := range plots[i] {
				if p != nil {
					p.Draw(canvases[i][j])
				}
			}
		}
	})
}

// peakCostChart draws each configuration's median peak RSS against its
// median wall time (CPU time for a workload of fixed duration): lower left
// is better.
func peakCostChart(dir, workload string, rep *report) error {
	cost := costName(workload)
	costOf := func(s summary) float64 { return s.Wall }
	label := "wall time"
	if cost == "cpu" {
		costOf = func(s summary) float64 { return s.CPU }
		label = "CPU time"
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: peak RSS against %s (medians; lower left is better; shape: GC setting)", workload, label)
	p.X.Label.Text = label + " (s)"
	p.Y.Label.Text = "peak RSS (MiB)"
	p.Y.Min, p.X.Min = 0, 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	// Room on the right and at the top for the labels and the legend.
	for _, s := range rep.Summary {
		if s.Workload == workload {
			p.X.Max = max(p.X.Max, costOf(s)*1.3)
			p.Y.Max = max(p.Y.Max, mib(s.PeakRSS)*1.15)
		}
	}
	gcIndex := map[string]int{}
	for _, st := range lab.Steppings {
		var xy plotter.XYs
		var labels []string
		var shapes []draw.GlyphDrawer
		for _, s := range rep.Summary {
			if s.Workload != workload || s.Stepping != st {
				continue
			}
			if _, ok := gcIndex[s.GC]; !ok {
				gcIndex[s.GC] = len(gcIndex)
			}
			xy = append(xy, plotter.XY{X: costOf(s), Y: mib(s.PeakRSS)})
			labels = append(labels, " "+s.GC)
			shapes = append(shapes, gcShapes[gcIndex[s.GC]%len(gcShapes)])
		}
		if len(xy) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: steppingColor[st], Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
		sc.GlyphStyleFunc = func(i int) draw.GlyphStyle {
			return draw.GlyphStyle{Color: steppingColor[st], Radius: vg.Points(4), Shape: shapes[i]}
		}
		p.Add(sc)
		p.Legend.Add("stepping="+st, sc)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: labels})
		if err != nil {
			return err
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Color = steppingColor[st]
			lb.TextStyle[i].Font.Size = vg.Points(8)
		}
		p.Add(lb)
	}
	return saveBoth(dir, "peak-vs-"+cost+"-"+workload, 8*vg.Inch, 5*vg.Inch, func(dc draw.Canvas) { p.Draw(dc) })
}

// saveBoth draws a chart once for PNG and once for SVG.
func saveBoth(dir, name string, w, h vg.Length, drawFn func(draw.Canvas)) error {
	png := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110))
	drawFn(draw.New(png))
	if err := writeFile(filepath.Join(dir, name+".png"), vgimg.PngCanvas{Canvas: png}); err != nil {
		return err
	}
	svg := vgsvg.New(w, h)
	drawFn(draw.New(svg))
	return writeFile(filepath.Join(dir, name+".svg"), svg)
}

func writeFile(path string, w io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
