//! An SVG scatter plot of compression ratio against decode speed: one mark per data set,
//! encoding and chunk size; colour by encoding, shape by data set, hollow and larger for
//! larger chunks.
//!
//! The document is well-formed by construction: every element goes through [`Svg`],
//! which writes each attribute once (a later value for a name replaces the earlier) and
//! escapes every attribute value and text; no comments are written (a data set's name
//! goes in a `<title>`, escaped, where any text is allowed).

use std::fmt::Write;

use super::compare::Measurement;

/// Plot area and margins, in pixels; the legend's width follows its longest name.
const PLOT_W: f64 = 620.0;
const PLOT_H: f64 = 480.0;
const LEFT: f64 = 80.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 70.0;
const LEGEND_GAP: f64 = 24.0;
const LINE: f64 = 20.0;
/// Width of a character of the legend's 13 px sans-serif text, generously.
const CHAR_W: f64 = 8.0;

/// Twelve colours told apart in print and by most colour-blind readers (Paul Tol's
/// "muted" and "bright" sets).
const COLOURS: [&str; 12] = [
    "#332288", "#88ccee", "#44aa99", "#117733", "#999933", "#ddcc77", "#cc6677", "#882255",
    "#aa4499", "#4477aa", "#ee6677", "#222222",
];

/// Shapes as unit polygons (radius 1); with three centre marks they tell 30 data sets
/// apart, and more keep their name in the mark's title.
const SHAPES: usize = 10;

/// Escapes text and attribute values for XML.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0 at all.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// An element's attributes: each name once.
#[derive(Default)]
struct Attrs(Vec<(&'static str, String)>);

impl Attrs {
    // By value like any builder: callers pass numbers and strings alike.
    #[allow(clippy::needless_pass_by_value)]
    fn set(mut self, name: &'static str, value: impl ToString) -> Self {
        let value = value.to_string();
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.0.push((name, value)),
        }
        self
    }
}

/// An SVG document being written.
struct Svg {
    out: String,
    open: Vec<&'static str>,
}

impl Svg {
    fn new(width: f64, height: f64) -> Self {
        let mut svg = Self {
            out: String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"),
            open: Vec::new(),
        };
        svg.start(
            "svg",
            Attrs::default()
                .set("xmlns", "http://www.w3.org/2000/svg")
                .set("width", width)
                .set("height", height)
                .set("viewBox", format!("0 0 {width} {height}"))
                .set("font-family", "sans-serif")
                .set("font-size", 13),
        );
        svg
    }

    fn tag(&mut self, name: &str, attrs: Attrs) {
        let _ = write!(self.out, "<{name}");
        for (n, v) in attrs.0 {
            let _ = write!(self.out, " {n}=\"{}\"", escape(&v));
        }
    }

    /// `<name attrs/>`.
    fn empty(&mut self, name: &'static str, attrs: Attrs) {
        self.tag(name, attrs);
        self.out.push_str("/>\n");
    }

    /// `<name attrs>`, closed by [`end`](Self::end).
    fn start(&mut self, name: &'static str, attrs: Attrs) {
        self.tag(name, attrs);
        self.out.push_str(">\n");
        self.open.push(name);
    }

    fn end(&mut self) {
        if let Some(name) = self.open.pop() {
            let _ = writeln!(self.out, "</{name}>");
        }
    }

    /// `<name attrs>text</name>`, the text escaped.
    fn text(&mut self, name: &'static str, attrs: Attrs, text: &str) {
        self.tag(name, attrs);
        let _ = writeln!(self.out, ">{}</{name}>", escape(text));
    }

    fn finish(mut self) -> String {
        while !self.open.is_empty() {
            self.end();
        }
        self.out
    }
}

/// A mark: data set `shape`'s polygon at (x, y), radius `r`, in `colour`; `hollow` for
/// larger chunks.
fn mark(svg: &mut Svg, shape: usize, x: f64, y: f64, r: f64, colour: &str, hollow: bool) {
    let fill = if hollow { "white" } else { colour };
    let style = |a: Attrs| {
        a.set("fill", fill)
            .set("stroke", colour)
            .set("stroke-width", if hollow { 2 } else { 1 })
    };
    let polygon = |points: &[(f64, f64)]| {
        points
            .iter()
            .map(|(px, py)| format!("{:.1},{:.1}", x + px * r, y + py * r))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let regular = |n: usize, turn: f64, radii: &[f64]| -> Vec<(f64, f64)> {
        (0..n)
            .map(|i| {
                let angle = std::f64::consts::TAU * (i as f64 / n as f64 + turn);
                let radius = radii[i % radii.len()];
                (radius * angle.sin(), -radius * angle.cos())
            })
            .collect()
    };
    let points = match shape % SHAPES {
        0 => {
            svg.empty(
                "circle",
                style(Attrs::default())
                    .set("cx", format!("{x:.1}"))
                    .set("cy", format!("{y:.1}"))
                    .set("r", r),
            );
            None
        }
        1 => Some(regular(4, 0.125, &[1.2])),     // square
        2 => Some(regular(3, 0.0, &[1.3])),       // triangle up
        3 => Some(regular(4, 0.0, &[1.3])),       // diamond
        4 => Some(regular(3, 0.5, &[1.3])),       // triangle down
        5 => Some(regular(5, 0.0, &[1.15])),      // pentagon
        6 => Some(regular(6, 0.0, &[1.15])),      // hexagon
        7 => Some(regular(10, 0.0, &[1.4, 0.6])), // star
        8 => Some(regular(3, 0.25, &[1.3])),      // triangle right
        _ => Some(regular(3, 0.75, &[1.3])),      // triangle left
    };
    if let Some(points) = points {
        svg.empty(
            "polygon",
            style(Attrs::default()).set("points", polygon(&points)),
        );
    }
    // Data sets past the tenth get a centre mark: a dot, then a ring.
    match (shape / SHAPES) % 3 {
        1 => svg.empty(
            "circle",
            Attrs::default()
                .set("cx", format!("{x:.1}"))
                .set("cy", format!("{y:.1}"))
                .set("r", 1.8)
                .set("fill", if hollow { colour } else { "white" }),
        ),
        2 => svg.empty(
            "circle",
            Attrs::default()
                .set("cx", format!("{x:.1}"))
                .set("cy", format!("{y:.1}"))
                .set("r", r * 0.45)
                .set("fill", "none")
                .set("stroke", if hollow { colour } else { "white" })
                .set("stroke-width", 1.5),
        ),
        _ => {}
    }
}

/// Round tick steps covering `min..max`.
fn ticks(min: f64, max: f64) -> Vec<f64> {
    let span = (max - min).max(1e-9);
    let raw = span / 6.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| span / s <= 7.0)
        .unwrap_or(magnitude * 10.0);
    let mut t = (min / step).ceil() * step;
    let mut out = Vec::new();
    while t <= max + step * 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

/// 1-2-5 ticks between `min` and `max` (both positive).
fn log_ticks(min: f64, max: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut decade = 10f64.powf(min.log10().floor());
    while decade <= max {
        for m in [1.0, 2.0, 5.0] {
            let t = decade * m;
            if t >= min && t <= max {
                out.push(t);
            }
        }
        decade *= 10.0;
    }
    out
}

fn first_seen<T: PartialEq + Clone>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn range(values: impl Iterator<Item = f64> + Clone) -> Option<(f64, f64)> {
    let lo = values
        .clone()
        .filter(|v| v.is_finite())
        .fold(f64::INFINITY, f64::min);
    let hi = values
        .filter(|v| v.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    (lo <= hi).then_some((lo, hi))
}

/// The plot as an SVG document.
pub fn svg(measurements: &[Measurement]) -> String {
    let datasets = first_seen(measurements.iter().map(|m| m.dataset.clone()));
    let encodings = first_seen(measurements.iter().map(|m| m.strategy.to_string()));
    let mut chunks = first_seen(measurements.iter().map(|m| m.chunk_bytes));
    chunks.sort_unstable();

    // Decode speeds span orders of magnitude (plain vs compressed): log scale.
    let (x_min, x_max) = match range(measurements.iter().map(|m| m.decode_gbps)) {
        Some((lo, hi)) if lo > 0.0 => (lo / 1.4, hi * 1.4),
        _ => (0.1, 100.0),
    };
    let (y_min, y_max) = match range(measurements.iter().map(Measurement::ratio)) {
        Some((lo, hi)) => {
            let pad = 0.1 * (hi - lo).max(0.1);
            ((lo - pad).max(0.0), hi + pad)
        }
        None => (0.0, 2.0),
    };
    let sx = |v: f64| LEFT + (v.max(x_min).ln() - x_min.ln()) / (x_max.ln() - x_min.ln()) * PLOT_W;
    let sy = |v: f64| TOP + PLOT_H - (v - y_min) / (y_max - y_min) * PLOT_H;

    let longest = datasets
        .iter()
        .chain(&encodings)
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0)
        .max(24);
    let legend_w = 40.0 + longest as f64 * CHAR_W;
    let width = (LEFT + PLOT_W + LEGEND_GAP + legend_w).ceil();
    let legend_lines = encodings.len() + datasets.len() + 6;
    let height = (TOP + PLOT_H + BOTTOM).max(TOP + 10.0 + legend_lines as f64 * LINE + 40.0);
    let mut svg = Svg::new(width, height);
    svg.empty(
        "rect",
        Attrs::default()
            .set("width", "100%")
            .set("height", "100%")
            .set("fill", "white"),
    );
    svg.text(
        "text",
        Attrs::default()
            .set("x", LEFT + PLOT_W / 2.0)
            .set("y", 28)
            .set("text-anchor", "middle")
            .set("font-size", 17),
        "Compression ratio against decode speed (miniblock compare)",
    );
    for t in log_ticks(x_min, x_max) {
        let x = format!("{:.1}", sx(t));
        svg.empty(
            "line",
            Attrs::default()
                .set("x1", &x)
                .set("y1", TOP)
                .set("x2", &x)
                .set("y2", TOP + PLOT_H)
                .set("stroke", "#e0e0e0"),
        );
        svg.text(
            "text",
            Attrs::default()
                .set("x", &x)
                .set("y", TOP + PLOT_H + 18.0)
                .set("text-anchor", "middle"),
            &format!("{t}"),
        );
    }
    for t in ticks(y_min, y_max) {
        let y = format!("{:.1}", sy(t));
        svg.empty(
            "line",
            Attrs::default()
                .set("x1", LEFT)
                .set("y1", &y)
                .set("x2", LEFT + PLOT_W)
                .set("y2", &y)
                .set("stroke", "#e0e0e0"),
        );
        svg.text(
            "text",
            Attrs::default()
                .set("x", LEFT - 8.0)
                .set("y", format!("{:.1}", sy(t) + 4.0))
                .set("text-anchor", "end"),
            &format!("{t:.2}"),
        );
    }
    svg.empty(
        "rect",
        Attrs::default()
            .set("x", LEFT)
            .set("y", TOP)
            .set("width", PLOT_W)
            .set("height", PLOT_H)
            .set("fill", "none")
            .set("stroke", "black"),
    );
    svg.text(
        "text",
        Attrs::default()
            .set("x", LEFT + PLOT_W / 2.0)
            .set("y", TOP + PLOT_H + 48.0)
            .set("text-anchor", "middle"),
        "decode speed, GB/s of raw values, log scale (higher is better)",
    );
    svg.text(
        "text",
        Attrs::default()
            .set(
                "transform",
                format!("translate(24,{}) rotate(-90)", TOP + PLOT_H / 2.0),
            )
            .set("text-anchor", "middle"),
        "compression ratio, raw / encoded (higher is better)",
    );

    let colour = |label: &str| {
        let i = encodings.iter().position(|l| l == label).unwrap_or(0);
        COLOURS[i % COLOURS.len()]
    };
    let rank = |chunk: usize| chunks.iter().position(|&c| c == chunk).unwrap_or(0);
    for m in measurements {
        let shape = datasets.iter().position(|d| *d == m.dataset).unwrap_or(0);
        let label = m.strategy.to_string();
        let r = 5.0 + rank(m.chunk_bytes) as f64;
        svg.start("g", Attrs::default());
        svg.text(
            "title",
            Attrs::default(),
            &format!(
                "{}, {label}, {} KiB chunks: ratio {:.3}, decode {:.2} GB/s",
                m.dataset,
                m.chunk_bytes / 1024,
                m.ratio(),
                m.decode_gbps
            ),
        );
        mark(
            &mut svg,
            shape,
            sx(m.decode_gbps),
            sy(m.ratio()),
            r,
            colour(&label),
            rank(m.chunk_bytes) > 0,
        );
        svg.end();
    }

    let lx = LEFT + PLOT_W + LEGEND_GAP;
    let mut ly = TOP + 10.0;
    let heading = |svg: &mut Svg, y: f64, text: &str| {
        svg.text(
            "text",
            Attrs::default()
                .set("x", lx)
                .set("y", y)
                .set("font-weight", "bold"),
            text,
        );
    };
    let entry = |svg: &mut Svg, y: f64, text: &str| {
        svg.text(
            "text",
            Attrs::default().set("x", lx + 22.0).set("y", y),
            text,
        );
    };
    heading(&mut svg, ly, "encoding (colour)");
    for label in &encodings {
        ly += LINE;
        mark(&mut svg, 0, lx + 8.0, ly - 4.0, 5.0, colour(label), false);
        entry(&mut svg, ly, label);
    }
    if chunks.len() > 1 {
        for (i, chunk) in chunks.iter().enumerate() {
            ly += LINE;
            mark(
                &mut svg,
                0,
                lx + 8.0,
                ly - 4.0,
                5.0 + i as f64,
                "#555555",
                i > 0,
            );
            entry(&mut svg, ly, &format!("{} KiB chunks", chunk / 1024));
        }
    }
    ly += LINE * 1.7;
    heading(&mut svg, ly, "data set (shape)");
    for (i, name) in datasets.iter().enumerate() {
        ly += LINE;
        mark(&mut svg, i, lx + 8.0, ly - 4.0, 5.0, "#555555", false);
        entry(&mut svg, ly, name);
    }
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_are_set_once_and_escaped() {
        let attrs = Attrs::default()
            .set("stroke", "red")
            .set("stroke", "a\"b<c>&'d");
        assert_eq!(attrs.0.len(), 1);
        let mut svg = Svg::new(10.0, 10.0);
        svg.empty("rect", attrs);
        svg.text("text", Attrs::default(), "x -- y <z> \u{1}");
        let doc = svg.finish();
        assert!(
            doc.contains(r#"stroke="a&quot;b&lt;c&gt;&amp;&apos;d""#),
            "{doc}"
        );
        assert!(doc.contains(">x -- y &lt;z&gt; \u{fffd}</text>"), "{doc}");
        assert!(doc.trim_end().ends_with("</svg>"));
    }
}
