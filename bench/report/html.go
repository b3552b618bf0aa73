// SPDX-License-Identifier: Apache-2.0

package report

import (
	_ "embed"
	"fmt"
	htmltemplate "html/template"
	"io"
	"math"
	"strings"

	"github.com/tracer-dev/tracer/bench/result"
)

//go:embed report.html.tmpl
var reportHTMLTmpl string

var reportHTML = func() *htmltemplate.Template {
	funcs := htmltemplate.FuncMap{}
	for k, v := range reportFuncs(func(s string) string { return s }) {
		funcs[k] = v
	}
	// Ranges take an en dash in HTML, after which a narrow column may
	// break the line (never after a hyphen before a digit).
	interval := funcs["interval"].(func(result.Row) string)
	funcs["interval"] = func(r result.Row) string { return strings.Replace(interval(r), "-", "\u2013", 1) }
	funcs["floorcell"] = func(r result.Row) string { return strings.ReplaceAll(floorCell(r), "-", "\u2013") }
	funcs["svgchart"] = svgChart
	funcs["pereventchart"] = perEventSVG
	// Colours are "#rrggbb" (newModeTable keeps no other form).
	funcs["colorCSS"] = func(c string) htmltemplate.CSS { return htmltemplate.CSS(c) }
	funcs["chartModes"] = func(cs []Chart) []Bar {
		var out []Bar
		seen := map[string]bool{}
		for _, c := range cs {
			for _, b := range c.Bars {
				if !seen[b.Mode] {
					seen[b.Mode] = true
					out = append(out, Bar{Mode: b.Mode, Color: b.Color})
				}
			}
		}
		return out
	}
	funcs["verdictClass"] = func(s string) string {
		switch s {
		case "works":
			return "ok"
		case "cannot":
			return "bad"
		}
		return "warn"
	}
	return htmltemplate.Must(htmltemplate.New("html").Funcs(funcs).Parse(reportHTMLTmpl))
}()

// WriteHTML renders r as one self-contained HTML page: inline CSS, the bar
// charts as inline SVG, nothing fetched.
func WriteHTML(w io.Writer, r *Report) error {
	if err := reportHTML.ExecuteTemplate(w, "report", r); err != nil {
		return fmt.Errorf("rendering html report: %w", err)
	}
	return nil
}

// svgChart draws one node's charts: a panel per workload, a horizontal bar
// per mode with its 95% interval as a whisker, each panel on its own scale
// -- logarithmic when its bars span more than tenfold -- with a dashed line
// at 1x.
func svgChart(charts []Chart) htmltemplate.HTML {
	const (
		width   = 760
		labelW  = 200
		barW    = 440
		rowH    = 24
		barH    = 16
		headH   = 26
		axisH   = 22
		panelGp = 14
	)
	height := 0
	for _, c := range charts {
		height += headH + len(c.Bars)*rowH + axisH + panelGp
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="ratio of elapsed time to the untraced run, per workload and mode, with 95%% intervals">`,
		width, height, width, height)
	y := 0
	esc := htmltemplate.HTMLEscapeString
	for _, c := range charts {
		fmt.Fprintf(&b, `<g class="panel" data-workload="%s" data-scale="%s">`, esc(c.Workload), map[bool]string{true: "log", false: "linear"}[c.Log])
		title := c.Workload
		if c.Log {
			title += " (log scale)"
		}
		if c.Paced {
			title += " (paced: the same time under every mode, its cost is per event)"
		}
		fmt.Fprintf(&b, `<text x="0" y="%d" class="ptitle">%s</text>`, y+17, esc(title))
		top := y + headH
		bottom := top + len(c.Bars)*rowH
		x := func(v float64) float64 { return labelW + c.Pos(v)*barW }
		for _, t := range c.Ticks() {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="grid"/>`, x(t), top-4, x(t), bottom)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="tick">%gx</text>`, x(t), bottom+15, t)
		}
		for i, bar := range c.Bars {
			by := top + i*rowH
			fmt.Fprintf(&b, `<text x="%d" y="%d" class="label">%s</text>`, labelW-8, by+barH-3, esc(bar.Label))
			w := BarWidth(c, bar.Ratio, barW)
			tip := fmt.Sprintf("%s %s: %.2fx", c.Workload, bar.Label, bar.Ratio)
			if bar.Hi > 0 {
				tip += fmt.Sprintf(", 95%% interval %.2fx-%.2fx", bar.Lo, bar.Hi)
			}
			class := "bar"
			if bar.Noise && bar.Mode != "none" {
				class = "bar noise"
				tip += ", within noise"
			}
			fmt.Fprintf(&b, `<rect class="%s" data-mode="%s" data-ratio="%.2f" x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`,
				class, esc(bar.Mode), bar.Ratio, labelW, by, w, barH, bar.Color, esc(tip))
			end := labelW + w
			if bar.Hi > 0 {
				lo, hi := x(bar.Lo), math.Min(x(bar.Hi), labelW+barW)
				cy := float64(by) + barH/2.0
				fmt.Fprintf(&b, `<g class="ci"><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/></g>`,
					lo, cy, hi, cy, lo, cy-5, lo, cy+5, hi, cy-5, hi, cy+5)
				end = math.Max(end, hi)
			}
			val := fmt.Sprintf("%.2fx", bar.Ratio)
			switch {
			case bar.Noise && bar.Mode != "none":
				val += " (noise)"
			case bar.Hi > 0 && bar.Hi < 1:
				val += " (drift)"
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="value">%s`, end+6, by+barH-3, val)
			if bar.Lost > 0 {
				fmt.Fprintf(&b, ` <tspan class="lost">%d lost</tspan>`, bar.Lost)
			}
			b.WriteString(`</text>`)
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" class="base"/>`, x(1), top-4, x(1), bottom)
		b.WriteString(`</g>`)
		y = bottom + axisH + panelGp
	}
	b.WriteString(`</svg>`)
	return htmltemplate.HTML(b.String())
}

// BarWidth is the drawn width of a bar of ratio v on chart c, full scale
// being full pixels: at least 1 pixel, so that no bar disappears.
func BarWidth(c Chart, v float64, full float64) float64 {
	return math.Max(1, c.Pos(v)*full)
}

// ticks returns up to 6 round grid values from 0 to max.
func ticks(max float64) []float64 {
	step := 0.25
	for _, s := range []float64{0.25, 0.5, 1, 2, 2.5, 5, 10, 20, 25, 50, 100, 200, 500, 1000} {
		step = s
		if max/s <= 6 {
			break
		}
	}
	var out []float64
	for v := 0.0; v <= max+1e-9; v += step {
		out = append(out, math.Round(v*100)/100)
	}
	return out
}
