//! An SVG scatter plot of compression ratio against decode speed: one mark per encoding
//! and data set, colour by encoding, shape by data set.

use std::fmt::Write;

use super::compare::Measurement;

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 600.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 300.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 70.0;

const COLOURS: [&str; 8] = [
    "#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#222222",
];

fn colour(labels: &[String], label: &str) -> &'static str {
    let i = labels.iter().position(|l| l == label).unwrap_or(0);
    COLOURS[i % COLOURS.len()]
}

/// A mark's fill: solid for the smallest chunk size, hollow (outlined) for larger ones.
fn paint(colour: &str, hollow: bool) -> String {
    if hollow {
        format!(r#"none" stroke="{colour}" stroke-width="2"#)
    } else {
        colour.to_owned()
    }
}

/// A mark of shape `shape` centred on (x, y).
fn mark(shape: usize, x: f64, y: f64, fill: &str) -> String {
    let r = 6.0;
    match shape % 6 {
        0 => format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{fill}"/>"#),
        1 => format!(
            r#"<rect x="{:.1}" y="{:.1}" width="{}" height="{}" fill="{fill}"/>"#,
            x - r,
            y - r,
            2.0 * r,
            2.0 * r
        ),
        2 => format!(
            r#"<polygon points="{x:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="{fill}"/>"#,
            y - r * 1.2,
            x - r * 1.1,
            y + r * 0.8,
            x + r * 1.1,
            y + r * 0.8
        ),
        3 => format!(
            r#"<polygon points="{x:.1},{:.1} {:.1},{y:.1} {x:.1},{:.1} {:.1},{y:.1}" fill="{fill}"/>"#,
            y - r * 1.3,
            x + r * 1.3,
            y + r * 1.3,
            x - r * 1.3
        ),
        4 => format!(
            r#"<path d="M{:.1},{y:.1}h{}M{x:.1},{:.1}v{}" stroke="{fill}" stroke-width="3"/>"#,
            x - r,
            2.0 * r,
            y - r,
            2.0 * r
        ),
        _ => format!(
            r#"<path d="M{:.1},{:.1}l{},{}M{:.1},{:.1}l{},{}" stroke="{fill}" stroke-width="3"/>"#,
            x - r,
            y - r,
            2.0 * r,
            2.0 * r,
            x - r,
            y + r,
            2.0 * r,
            -2.0 * r
        ),
    }
}

/// Round tick steps covering `0..max`.
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

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The plot as an SVG document.
pub fn svg(measurements: &[Measurement]) -> String {
    let mut datasets: Vec<&str> = Vec::new();
    for m in measurements {
        if !datasets.contains(&m.dataset.as_str()) {
            datasets.push(&m.dataset);
        }
    }
    // Decode speeds span orders of magnitude (plain vs compressed): log scale.
    let x_lo = measurements
        .iter()
        .map(|m| m.decode_gbps)
        .fold(f64::INFINITY, f64::min);
    let x_hi = measurements
        .iter()
        .map(|m| m.decode_gbps)
        .fold(0.0, f64::max);
    let (x_min, x_max) = if x_lo.is_finite() && x_lo > 0.0 {
        (x_lo / 1.4, x_hi * 1.4)
    } else {
        (0.1, 100.0)
    };
    let y_lo = measurements
        .iter()
        .map(Measurement::ratio)
        .fold(f64::INFINITY, f64::min);
    let y_hi = measurements
        .iter()
        .map(Measurement::ratio)
        .fold(0.0, f64::max);
    let (y_min, y_max) = if y_lo.is_finite() {
        (
            (y_lo - 0.1 * (y_hi - y_lo).max(0.1)).max(0.0),
            y_hi + 0.1 * (y_hi - y_lo).max(0.1),
        )
    } else {
        (0.0, 2.0)
    };
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let sx = |v: f64| LEFT + (v.max(x_min).ln() - x_min.ln()) / (x_max.ln() - x_min.ln()) * plot_w;
    let sy = |v: f64| TOP + plot_h - (v - y_min) / (y_max - y_min) * plot_h;

    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="13">
<rect width="100%" height="100%" fill="white"/>
<text x="{:.0}" y="28" text-anchor="middle" font-size="17">Compression ratio against decode speed (miniblock compare)</text>
"#,
        LEFT + plot_w / 2.0
    );
    // grid and ticks
    for t in log_ticks(x_min, x_max) {
        let x = sx(t);
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#e0e0e0"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{t}</text>"##,
            TOP + plot_h,
            TOP + plot_h + 18.0
        );
    }
    for t in ticks(y_min, y_max) {
        let y = sy(t);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e0e0e0"/><text x="{:.1}" y="{:.1}" text-anchor="end">{t:.2}</text>"##,
            LEFT + plot_w,
            LEFT - 8.0,
            y + 4.0
        );
    }
    let _ = writeln!(
        s,
        r#"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="black"/>
<text x="{:.0}" y="{:.0}" text-anchor="middle">decode speed, GB/s of raw values, log scale (higher is better)</text>
<text transform="translate(24,{:.0}) rotate(-90)" text-anchor="middle">compression ratio, raw / encoded (higher is better)</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 22.0,
        TOP + plot_h / 2.0
    );
    // marks
    let mut labels: Vec<String> = Vec::new();
    for m in measurements {
        let label = m.strategy.to_string();
        if !labels.contains(&label) {
            labels.push(label);
        }
    }
    let smallest_chunk = measurements
        .iter()
        .map(|m| m.chunk_bytes)
        .min()
        .unwrap_or(0);
    for m in measurements {
        let shape = datasets.iter().position(|d| *d == m.dataset).unwrap_or(0);
        let label = m.strategy.to_string();
        let fill = paint(colour(&labels, &label), m.chunk_bytes > smallest_chunk);
        let _ = writeln!(
            s,
            "{}<!-- {} {} {} KiB chunks -->",
            mark(shape, sx(m.decode_gbps), sy(m.ratio()), &fill),
            escape(&m.dataset),
            label,
            m.chunk_bytes / 1024
        );
    }
    // legends
    let lx = LEFT + plot_w + 24.0;
    let mut ly = TOP + 10.0;
    let _ = writeln!(
        s,
        r#"<text x="{lx}" y="{ly}" font-weight="bold">encoding (colour)</text>"#
    );
    for label in &labels {
        ly += 20.0;
        let _ = writeln!(
            s,
            r#"{}<text x="{:.0}" y="{:.0}">{}</text>"#,
            mark(0, lx + 8.0, ly - 4.0, colour(&labels, label)),
            lx + 22.0,
            ly,
            escape(label)
        );
    }
    if measurements.iter().any(|m| m.chunk_bytes > smallest_chunk) {
        ly += 20.0;
        let _ = writeln!(
            s,
            r#"<text x="{lx}" y="{ly}">hollow: chunks over {} KiB</text>"#,
            smallest_chunk / 1024
        );
    }
    ly += 34.0;
    let _ = writeln!(
        s,
        r#"<text x="{lx}" y="{ly}" font-weight="bold">data set (shape)</text>"#
    );
    for (i, d) in datasets.iter().enumerate() {
        ly += 20.0;
        let name: String = if d.chars().count() > 30 {
            d.chars().take(29).chain(['…']).collect()
        } else {
            (*d).to_owned()
        };
        let _ = writeln!(
            s,
            r#"{}<text x="{:.0}" y="{:.0}">{}</text>"#,
            mark(i, lx + 8.0, ly - 4.0, "#555"),
            lx + 22.0,
            ly,
            escape(&name)
        );
    }
    s.push_str("</svg>\n");
    s
}
