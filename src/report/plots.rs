//! The chart engine: a `Figure` (title, caption, stacked panels of series over one x axis)
//! drawn with plotters to SVG and PNG. Failed points are gaps with a dashed gray line at their
//! x; client-bound points get a black cross, so neither can pass for a valid measurement.
//! PNG text uses the DejaVu Sans shipped in assets/, so no system font is needed.

use anyhow::anyhow;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Once;

const FONT: &str = "sans-serif";
const WIDTH: u32 = 1100;
const HEADER_H: u32 = 74;
const LEGEND_W: u32 = 290;

/// Tableau 10: distinguishable, and readable in print.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const REFERENCE: RGBColor = RGBColor(110, 110, 110);
const FAILED: RGBColor = RGBColor(150, 150, 150);

/// How the x axis maps values.
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    Linear,
    /// For 1, 2, 4 ... 512 clients: log scale so the small counts are readable.
    Log,
    /// Categories at x = 0, 1, 2 ... (e.g. burst (ratio, %) pairs).
    Labels(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LineKind {
    Solid,
    Dashed,
    /// A reference (y = x, a limit, a target): dotted gray, no markers.
    Reference,
    /// Markers only, hollow, no line (a repeated run's trials).
    Scatter,
    /// Translucent rectangles: the points in pairs, each a rectangle's lower-left and
    /// upper-right corners (an interval over an x range).
    Band,
}

/// One point; `y: None` is a gap (a failed or unmeasured point).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct XY {
    pub x: f64,
    pub y: Option<f64>,
    pub client_bound: bool,
}

impl XY {
    pub fn new(x: f64, y: f64) -> XY {
        XY {
            x,
            y: Some(y).filter(|v| v.is_finite()),
            client_bound: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text; '\n' splits it over lines.
    pub name: String,
    pub color: usize,
    pub line: LineKind,
    pub points: Vec<XY>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// Y axis label, with units.
    pub y_label: String,
    pub series: Vec<Series>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// File name without extension.
    pub stem: String,
    pub title: String,
    /// The caption under the title: backend, machine, run.
    pub subtitle: String,
    /// X axis label, with units.
    pub x_label: String,
    pub x_axis: XAxis,
    pub panels: Vec<Panel>,
    /// X positions of failed sweep points (drawn as dashed gray lines).
    pub failed_x: Vec<f64>,
    /// Labelled vertical marks (sweep point starts on a time series).
    pub marks: Vec<(f64, String)>,
}

impl Figure {
    /// True if some series has at least one measured point.
    pub fn has_data(&self) -> bool {
        self.panels.iter().any(|p| {
            p.series
                .iter()
                .any(|s| s.line != LineKind::Reference && s.points.iter().any(|q| q.y.is_some()))
        })
    }
}

/// A file or folder name `<prefix>-<parts joined by ->`, bounded to 100 bytes (a file
/// system's limit is 255): past that, the first part, how many more, and a hash of all of them,
/// so that different sets of runs keep different names.
pub fn bounded_name(prefix: &str, parts: &[&str]) -> String {
    const MAX: usize = 100;
    let full = format!("{prefix}-{}", parts.join("-"));
    if full.len() <= MAX {
        return full;
    }
    // FNV-1a: stable across builds and platforms (std's hasher is not).
    let hash = full.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let tail = format!("-and-{}-more-{hash:016x}", parts.len().saturating_sub(1));
    let mut head = format!("{prefix}-{}", parts.first().copied().unwrap_or(""));
    let mut cut = MAX.saturating_sub(tail.len()).min(head.len());
    while !head.is_char_boundary(cut) {
        cut -= 1;
    }
    head.truncate(cut);
    head + &tail
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
        // The font is compiled in and known to be valid; a failure here is a build defect.
        plotters::style::register_font(FONT, FontStyle::Normal, bytes)
            .unwrap_or_else(|_| panic!("assets/fonts/DejaVuSans.ttf is not a valid font"));
    });
}

/// Draws `fig` into `dir/<stem>.svg` and `dir/<stem>.png`; returns both paths.
pub fn render(fig: &Figure, dir: &Path) -> anyhow::Result<[PathBuf; 2]> {
    register_font();
    let n = fig.panels.len().max(1) as u32;
    let size = (WIDTH, HEADER_H + if n == 1 { 560 } else { 390 * n });
    let svg_path = dir.join(format!("{}.svg", fig.stem));
    let png_path = dir.join(format!("{}.png", fig.stem));

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw(fig, &root)?;
        root.present()
            .map_err(|e| anyhow!("drawing {}: {e}", svg_path.display()))?;
    }
    crate::sys::files::atomic_write(&svg_path, svg.as_bytes())?;

    let mut rgb = vec![0u8; (size.0 * size.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
        draw(fig, &root)?;
        root.present()
            .map_err(|e| anyhow!("drawing {}: {e}", png_path.display()))?;
    }
    write_png(&png_path, size, &rgb)?;
    Ok([svg_path, png_path])
}

/// Encodes the image in memory, then writes it whole (never a truncated PNG left behind).
fn write_png(path: &Path, (w, h): (u32, u32), rgb: &[u8]) -> anyhow::Result<()> {
    let mut bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut bytes, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Best);
        enc.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
        enc.write_header()?.write_image_data(rgb)?;
    }
    crate::sys::files::atomic_write(path, &bytes)
}

fn err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("plotting failed: {e}")
}

fn draw<DB: DrawingBackend>(fig: &Figure, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let (header, body) = root.split_vertically(HEADER_H);
    header
        .draw_text(&fig.title, &(FONT, 22).into_font().color(&BLACK), (16, 10))
        .map_err(err)?;
    for (i, line) in fig.subtitle.lines().take(2).enumerate() {
        header
            .draw_text(
                line,
                &(FONT, 13).into_font().color(&RGBColor(80, 80, 80)),
                (16, 40 + 16 * i as i32),
            )
            .map_err(err)?;
    }
    let areas = body.split_evenly((fig.panels.len().max(1), 1));
    for (i, (panel, area)) in fig.panels.iter().zip(&areas).enumerate() {
        let last = i + 1 == fig.panels.len();
        let (plot, legend) = area.split_horizontally(WIDTH - LEGEND_W);
        draw_legend(fig, panel, &legend)?;
        let yr = y_range(panel);
        let pts = || panel.series.iter().flat_map(|s| s.points.iter());
        let xs: Vec<f64> = pts()
            .map(|p| p.x)
            .chain(fig.failed_x.iter().copied())
            .chain(fig.marks.iter().map(|m| m.0))
            .filter(|x| x.is_finite())
            .collect();
        match &fig.x_axis {
            XAxis::Log if xs.iter().all(|x| *x > 0.0) && !xs.is_empty() => {
                let lo = xs.iter().cloned().fold(f64::INFINITY, f64::min) / 1.3;
                let hi = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max) * 1.3;
                draw_panel(fig, panel, &plot, (lo..hi).log_scale(), yr, last)?;
            }
            XAxis::Labels(l) => {
                draw_panel(fig, panel, &plot, -0.5..(l.len() as f64 - 0.5), yr, last)?
            }
            _ => draw_panel(fig, panel, &plot, linear_range(&xs), yr, last)?,
        }
    }
    Ok(())
}

/// The label font's size in pixels.
const MARK_FONT_PX: i32 = 13;

/// Any x of the marks (for pixel rows, whose y does not depend on x).
fn xr_start(marks: &[(f64, String)]) -> f64 {
    marks.first().map_or(0.0, |m| m.0)
}

/// The row (0 = top) each mark's label goes on: the first whose last label ends left of this
/// one's start, so labels never overlap (at ~0.6 em a character).
fn label_rows(lefts: &[i32], marks: &[(f64, String)], font_px: i32) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lefts.len()).collect();
    order.sort_by_key(|&i| lefts[i]);
    let mut ends: Vec<i32> = Vec::new();
    let mut rows = vec![0; lefts.len()];
    for i in order {
        let width = marks[i].1.chars().count() as i32 * font_px * 6 / 10 + 6;
        let row = ends
            .iter()
            .position(|&e| e <= lefts[i])
            .unwrap_or(ends.len());
        if row == ends.len() {
            ends.push(0);
        }
        ends[row] = lefts[i] + width;
        rows[i] = row;
    }
    rows
}

fn linear_range(xs: &[f64]) -> Range<f64> {
    let lo = xs.iter().cloned().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    let pad = if hi > lo { (hi - lo) * 0.04 } else { 1.0 };
    // Start rates and counts at 0 when the data is non-negative, as the paper's axes do.
    let lo = if lo >= 0.0 && lo - pad <= (hi - lo) * 0.25 {
        0.0
    } else {
        lo - pad
    };
    lo..hi + pad
}

fn y_range(panel: &Panel) -> Range<f64> {
    let ys = panel
        .series
        .iter()
        .flat_map(|s| s.points.iter())
        .filter_map(|p| p.y);
    let (lo, hi) = ys.fold((0.0f64, f64::NEG_INFINITY), |(l, h), y| {
        (l.min(y), h.max(y))
    });
    let hi = if hi.is_finite() && hi > lo {
        hi
    } else {
        lo + 1.0
    };
    lo..hi + (hi - lo) * 0.08
}

/// Compact tick labels: 1500, 2.5, 0.25.
pub fn fmt_tick(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn draw_panel<DB, XR>(
    fig: &Figure,
    panel: &Panel,
    area: &DrawingArea<DB, Shift>,
    xr: XR,
    yr: Range<f64>,
    last: bool,
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    XR: AsRangedCoord<Value = f64>,
    XR::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .margin_top(12)
        .margin_left(10)
        .margin_right(16)
        .x_label_area_size(if last { 52 } else { 34 })
        .y_label_area_size(78)
        .build_cartesian_2d(xr, yr.clone())
        .map_err(err)?;

    let labels = match &fig.x_axis {
        XAxis::Labels(l) => Some(l.clone()),
        _ => None,
    };
    let x_fmt = |v: &f64| match &labels {
        Some(l) => {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < l.len() {
                l[i as usize].clone()
            } else {
                String::new()
            }
        }
        None => fmt_tick(*v),
    };
    let y_fmt = |v: &f64| fmt_tick(*v);
    let mut mesh = chart.configure_mesh();
    mesh.y_desc(panel.y_label.as_str())
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 16))
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(BLACK.mix(0.03));
    if let Some(l) = &labels {
        mesh.x_labels(l.len() + 1);
    } else {
        mesh.x_labels(12);
    }
    if last {
        mesh.x_desc(fig.x_label.as_str());
    }
    mesh.draw().map_err(err)?;

    let (y0, y1) = (yr.start, yr.end);
    for &x in &fig.failed_x {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x, y0), (x, y1)],
                6,
                6,
                FAILED.stroke_width(2),
            ))
            .map_err(err)?;
    }
    // Marks close together get their labels on rows below one another, so none overprints
    // another ("mark 1" and "snapshot" a second apart).
    let (_, top_px) = chart.backend_coord(&(xr_start(&fig.marks), y1));
    let (_, bottom_px) = chart.backend_coord(&(xr_start(&fig.marks), y0));
    let per_px = (y1 - y0) / f64::from((bottom_px - top_px).max(1));
    let lefts: Vec<i32> = fig
        .marks
        .iter()
        .map(|(x, _)| chart.backend_coord(&(*x, y1)).0)
        .collect();
    let rows = label_rows(&lefts, &fig.marks, MARK_FONT_PX);
    for ((x, label), row) in fig.marks.iter().zip(rows) {
        chart
            .draw_series(LineSeries::new(
                vec![(*x, y0), (*x, y1)],
                BLACK.mix(0.25).stroke_width(1),
            ))
            .map_err(err)?;
        let y = y1 - f64::from(row as i32 * (MARK_FONT_PX + 2)) * per_px;
        chart
            .draw_series(std::iter::once(Text::new(
                label.clone(),
                (*x, y),
                (FONT, MARK_FONT_PX)
                    .into_font()
                    .color(&RGBColor(60, 60, 60)),
            )))
            .map_err(err)?;
    }

    for s in &panel.series {
        let color = series_color(s);
        // Thin lines for long time series: plotters draws wide lines as polygons, and the
        // steep, short segments of a noisy series then leave spikes across the panel.
        let wide = s.line != LineKind::Reference && s.points.len() <= 60;
        let style = color.stroke_width(if wide { 2 } else { 1 });
        if s.line == LineKind::Band {
            let corners = s
                .points
                .chunks_exact(2)
                .filter_map(|c| Some(((c[0].x, c[0].y?), (c[1].x, c[1].y?))));
            chart
                .draw_series(corners.map(|(a, b)| Rectangle::new([a, b], color.mix(0.22).filled())))
                .map_err(err)?;
            continue;
        }
        // Client-bound crosses first, so the series' own marker stays visible on top.
        let bound: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|p| p.client_bound)
            .filter_map(|p| p.y.map(|y| (p.x, y)))
            .collect();
        chart
            .draw_series(
                bound
                    .iter()
                    .map(|p| Cross::new(*p, 8, BLACK.stroke_width(3))),
            )
            .map_err(err)?;
        chart
            .draw_series(
                bound
                    .iter()
                    .map(|p| Circle::new(*p, 10, BLACK.stroke_width(1))),
            )
            .map_err(err)?;
        for seg in segments(&s.points) {
            match s.line {
                LineKind::Solid => {
                    chart
                        .draw_series(LineSeries::new(seg.clone(), style))
                        .map_err(err)?;
                }
                LineKind::Dashed => {
                    chart
                        .draw_series(DashedLineSeries::new(seg.clone(), 9, 5, style))
                        .map_err(err)?;
                }
                LineKind::Reference => {
                    chart
                        .draw_series(DashedLineSeries::new(seg.clone(), 3, 4, style))
                        .map_err(err)?;
                }
                LineKind::Scatter => {
                    chart
                        .draw_series(
                            seg.iter()
                                .map(|p| Circle::new(*p, 4, color.stroke_width(2))),
                        )
                        .map_err(err)?;
                }
                LineKind::Band => {}
            }
            // Markers on sweep curves; a long time series would drown in them.
            let markers = s.points.len() <= 60;
            if markers && s.line == LineKind::Solid {
                chart
                    .draw_series(seg.iter().map(|p| Circle::new(*p, 4, color.filled())))
                    .map_err(err)?;
            } else if markers && s.line == LineKind::Dashed {
                chart
                    .draw_series(
                        seg.iter()
                            .map(|p| TriangleMarker::new(*p, 5, color.stroke_width(2))),
                    )
                    .map_err(err)?;
            }
        }
    }
    Ok(())
}

fn series_color(s: &Series) -> RGBColor {
    if s.line == LineKind::Reference {
        REFERENCE
    } else {
        PALETTE[s.color % PALETTE.len()]
    }
}

/// Runs of consecutive measured points: a `None` breaks the line.
fn segments(points: &[XY]) -> Vec<Vec<(f64, f64)>> {
    let mut out = vec![Vec::new()];
    for p in points {
        match p.y {
            Some(y) if p.x.is_finite() => out.last_mut().unwrap().push((p.x, y)),
            _ => {
                if !out.last().unwrap().is_empty() {
                    out.push(Vec::new());
                }
            }
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// Draws one legend entry's line/marker sample at height y.
type LegendSample<DB> = dyn Fn(&DrawingArea<DB, Shift>, i32) -> anyhow::Result<()>;

/// The legend, in its own column to the right so it never hides data.
fn draw_legend<DB: DrawingBackend>(
    fig: &Figure,
    panel: &Panel,
    area: &DrawingArea<DB, Shift>,
) -> anyhow::Result<()> {
    let text = (FONT, 14).into_font().color(&BLACK);
    let mut y = 22i32;
    let mut entry = |name: &str, sample: &LegendSample<DB>| -> anyhow::Result<()> {
        sample(area, y)?;
        for (i, line) in name.lines().enumerate() {
            area.draw_text(line, &text, (48, y - 8 + 17 * i as i32))
                .map_err(err)?;
        }
        y += 17 * name.lines().count().max(1) as i32 + 9;
        Ok(())
    };
    for s in &panel.series {
        if !s.points.iter().any(|p| p.y.is_some()) {
            continue;
        }
        let c = series_color(s);
        let kind = s.line;
        entry(&s.name, &move |a: &DrawingArea<DB, Shift>, y: i32| {
            let seg = |x0: i32, x1: i32, w: u32| {
                a.draw(&PathElement::new(vec![(x0, y), (x1, y)], c.stroke_width(w)))
                    .map_err(err)
            };
            match kind {
                LineKind::Solid => {
                    seg(6, 40, 2)?;
                    a.draw(&Circle::new((23, y), 4, c.filled())).map_err(err)?;
                }
                LineKind::Dashed => {
                    seg(6, 15, 2)?;
                    seg(31, 40, 2)?;
                    a.draw(&TriangleMarker::new((23, y), 5, c.stroke_width(2)))
                        .map_err(err)?;
                }
                LineKind::Reference => {
                    for x in (6..40).step_by(7) {
                        seg(x, x + 3, 1)?;
                    }
                }
                LineKind::Scatter => {
                    a.draw(&Circle::new((23, y), 4, c.stroke_width(2)))
                        .map_err(err)?;
                }
                LineKind::Band => {
                    a.draw(&Rectangle::new(
                        [(6, y - 6), (40, y + 6)],
                        c.mix(0.22).filled(),
                    ))
                    .map_err(err)?;
                }
            }
            Ok(())
        })?;
    }
    let any_bound = panel
        .series
        .iter()
        .any(|s| s.points.iter().any(|p| p.client_bound && p.y.is_some()));
    if any_bound {
        entry(
            "client-bound point\n(load generator limit:\nnot a server result)",
            &|a, y| {
                a.draw(&Cross::new((23, y), 8, BLACK.stroke_width(3)))
                    .map_err(err)?;
                a.draw(&Circle::new((23, y), 10, BLACK.stroke_width(1)))
                    .map_err(err)
            },
        )?;
    }
    if !fig.failed_x.is_empty() {
        entry("failed point (gap)", &|a, y| {
            a.draw(&PathElement::new(
                vec![(23, y - 9), (23, y + 9)],
                FAILED.stroke_width(2),
            ))
            .map_err(err)
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// issue 28: "mark 1" and "snapshot" a second apart (a few pixels) go on two rows; a
    /// mark far to the right goes back to the top row.
    #[test]
    fn labels_of_marks_close_together_do_not_overprint() {
        let marks: Vec<(f64, String)> = ["mark 1", "snapshot", "mark 2"]
            .iter()
            .enumerate()
            .map(|(i, t)| (i as f64, t.to_string()))
            .collect();
        assert_eq!(label_rows(&[100, 104, 400], &marks, 13), [0, 1, 0]);
        assert_eq!(label_rows(&[100, 104, 108], &marks, 13), [0, 1, 2]);
    }

    #[test]
    fn gaps_split_lines() {
        let p = |x: f64, y: Option<f64>| XY {
            x,
            y,
            client_bound: false,
        };
        let s = segments(&[
            p(1.0, Some(1.0)),
            p(2.0, None),
            p(3.0, Some(3.0)),
            p(4.0, Some(4.0)),
        ]);
        assert_eq!(s, vec![vec![(1.0, 1.0)], vec![(3.0, 3.0), (4.0, 4.0)]]);
        assert!(XY::new(1.0, f64::NAN).y.is_none());
    }

    #[test]
    fn names_of_many_runs_stay_bounded_and_distinct() {
        let names: Vec<String> = (0..11)
            .map(|i| format!("20261128-001500-a-scenario-name-run-{i}"))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let a = bounded_name("compare", &refs);
        let b = bounded_name("compare", &refs[..10]);
        assert!(a.len() <= 100 && b.len() <= 100, "{a} {b}");
        assert_ne!(a, b);
        assert!(a.starts_with("compare-20261128-001500-a-scenario"), "{a}");
        assert!(a.contains("-and-10-more-"), "{a}");
        assert_eq!(bounded_name("compare", &["x", "y"]), "compare-x-y");
    }

    #[test]
    fn tick_labels_are_compact() {
        assert_eq!(fmt_tick(1500.0), "1500");
        assert_eq!(fmt_tick(2.5), "2.5");
        assert_eq!(fmt_tick(3.0), "3");
        assert_eq!(fmt_tick(0.25), "0.25");
        assert_eq!(fmt_tick(0.0), "0");
    }
}
