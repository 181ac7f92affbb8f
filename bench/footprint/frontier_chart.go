package main

import (
	"fmt"
	"image/color"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Colours of the frontier charts: the pacer's points, the memory limit's,
// and the stepper's at each program GOGC.
var (
	pacerColor   = color.RGBA{R: 0x33, G: 0x33, B: 0x33, A: 0xff}
	limitColor   = color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}
	stepperColor = map[string]color.Color{
		"100": color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		"off": color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	}
)

// drawFrontierCharts writes frontier-WORKLOAD.{png,svg} into dir for every
// workload: a panel per condition, memory over the floor against CPU time,
// the pacer's points joined into its frontier (solid: peak RSS; dashed:
// time-averaged), the memory-limit point, and the stepper as triangles
// (filled: peak; hollow: time-averaged).
func drawFrontierCharts(dir string, rep *frontierReport) error {
	for _, a := range rep.About {
		var plots []*plot.Plot
		for _, c := range rep.Conditions {
			p, err := frontierPanel(rep, a.Name, c)
			if err != nil {
				return err
			}
			if p != nil {
				plots = append(plots, p)
			}
		}
		if len(plots) == 0 {
			continue
		}
		cols := min(2, len(plots))
		rows := (len(plots) + cols - 1) / cols
		grid := make([][]*plot.Plot, rows)
		for i := range grid {
			grid[i] = make([]*plot.Plot, cols)
		}
		for i, p := range plots {
			grid[i/cols][i%cols] = p
		}
		w, h := vg.Length(cols)*5.5*vg.Inch, vg.Length(rows)*4*vg.Inch
		tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Inch / 4, PadY: vg.Inch / 4,
			PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
		if err := saveBoth(dir, "frontier-"+a.Name, w, h, func(dc draw.Canvas) {
			canvases := plot.Align(grid, tiles, dc)
			for i := range grid {
				for j, p := range grid[i] {
					if p != nil {
						p.Draw(canvases[i][j])
					}
				}
			}
		}); err != nil {
			return err
		}
	}
	return nil
}

// frontierPanel is one workload under one condition, or nil if it did not
// run.
func frontierPanel(rep *frontierReport, workload string, c condition) (*plot.Plot, error) {
	var pacer, limit, stepper []frontierSummary
	for _, s := range rep.Summary {
		if s.Workload != workload || s.Condition != c.Name {
			continue
		}
		switch s.Kind {
		case kindPacer:
			pacer = append(pacer, s)
		case kindLimit:
			limit = append(limit, s)
		case kindStepper:
			stepper = append(stepper, s)
		}
	}
	if len(pacer)+len(limit)+len(stepper) == 0 {
		return nil, nil
	}
	// Along the frontier: from the largest GOGC (least CPU, most memory)
	// to the smallest.
	slices.SortFunc(pacer, func(a, b frontierSummary) int { return atoi(b.GOGC) - atoi(a.GOGC) })

	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s, %s: memory over the floor against CPU", workload, c.Name)
	p.X.Label.Text = "CPU time (s)"
	p.Y.Label.Text = "RSS over the floor (MiB)"
	p.X.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	// Room at the top for the legend and on the right for the labels.
	var top, bottom, right float64
	for _, ss := range [][]frontierSummary{pacer, limit, stepper} {
		for _, s := range ss {
			top = max(top, float64(max(s.OverPeak, s.OverAvg))/(1<<20))
			bottom = min(bottom, float64(min(s.OverPeak, s.OverAvg))/(1<<20))
			right = max(right, s.CPU)
		}
	}
	p.Y.Min, p.Y.Max, p.X.Max = bottom*1.1, top*1.7+0.1, right*1.15
	xy := func(ss []frontierSummary, avg bool) plotter.XYs {
		out := make(plotter.XYs, len(ss))
		for i, s := range ss {
			over := s.OverPeak
			if avg {
				over = s.OverAvg
			}
			out[i] = plotter.XY{X: s.CPU, Y: float64(over) / (1 << 20)}
		}
		return out
	}
	for _, avg := range []bool{false, true} {
		if len(pacer) == 0 {
			break
		}
		lp, sc, err := plotter.NewLinePoints(xy(pacer, avg))
		if err != nil {
			return nil, err
		}
		lp.Color, sc.Color = pacerColor, pacerColor
		sc.Shape, sc.Radius = draw.CircleGlyph{}, vg.Points(3)
		name := "GOGC frontier, peak"
		if avg {
			lp.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			sc.Shape = draw.RingGlyph{}
			name = "GOGC frontier, time-averaged"
		}
		p.Add(lp, sc)
		p.Legend.Add(name, lp, sc)
		labels := make([]string, len(pacer))
		for i, s := range pacer {
			labels[i] = " " + s.GOGC
		}
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xy(pacer, avg), Labels: labels})
		if err != nil {
			return nil, err
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Font.Size = vg.Points(7)
			lb.TextStyle[i].Color = pacerColor
		}
		p.Add(lb)
	}
	add := func(ss []frontierSummary, avg bool, col color.Color, shape draw.GlyphDrawer, name string) error {
		sc, err := plotter.NewScatter(xy(ss, avg))
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(5), Shape: shape}
		p.Add(sc)
		p.Legend.Add(name, sc)
		return nil
	}
	if len(limit) > 0 {
		if err := add(limit, false, limitColor, draw.BoxGlyph{}, "GOMEMLIMIT near the floor, peak"); err != nil {
			return nil, err
		}
		if err := add(limit, true, limitColor, draw.SquareGlyph{}, "  time-averaged"); err != nil {
			return nil, err
		}
	}
	for _, s := range stepper {
		col := stepperColor[s.GOGC]
		if col == nil {
			col = stepperColor["100"]
		}
		one := []frontierSummary{s}
		if err := add(one, false, col, draw.PyramidGlyph{}, "stepper at GOGC="+s.GOGC+", peak"); err != nil {
			return nil, err
		}
		if err := add(one, true, col, draw.TriangleGlyph{}, "  time-averaged"); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// atoi is strconv.Atoi for GOGC values already checked.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
