//! A small inline SVG line chart of one series, scaled to its own maximum.

use std::fmt::Write;

use super::escape::esc;

pub const WIDTH: u32 = 160;
pub const HEIGHT: u32 = 36;

/// `values` (oldest first, `None` for a gap) over the chart's width, titled `title`; the
/// largest value is printed in a corner as the scale.
pub fn line(
    out: &mut String,
    values: &[Option<f64>],
    title: &str,
    max_label: impl Fn(f64) -> String,
) {
    let max = values.iter().flatten().fold(0.0f64, |m, v| m.max(*v));
    let _ = write!(
        out,
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         role=\"img\" aria-label=\"{}\"><title>{}</title>",
        esc(title),
        esc(title)
    );
    let n = values.len();
    if n >= 2 && max > 0.0 {
        let step = f64::from(WIDTH) / (n - 1) as f64;
        let h = f64::from(HEIGHT - 2);
        let mut run = String::new();
        for (i, v) in values.iter().enumerate() {
            match v {
                Some(v) => {
                    let y = 1.0 + h - (v / max) * h;
                    let _ = write!(run, "{:.1},{:.1} ", i as f64 * step, y);
                }
                None => flush(out, &mut run),
            }
        }
        flush(out, &mut run);
    }
    let _ = write!(
        out,
        "<text x=\"{}\" y=\"10\" text-anchor=\"end\">{}</text></svg>",
        WIDTH - 2,
        esc(&max_label(max))
    );
}

fn flush(out: &mut String, run: &mut String) {
    if !run.is_empty() {
        let _ = write!(out, "<polyline points=\"{}\"/>", run.trim_end());
        run.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_split_the_line() {
        let mut out = String::new();
        line(
            &mut out,
            &[Some(1.0), Some(2.0), None, Some(2.0), Some(0.0)],
            "t<",
            |m| format!("{m}"),
        );
        assert_eq!(out.matches("<polyline").count(), 2, "{out}");
        assert!(out.contains("<title>t&lt;</title>"));
        assert!(out.contains(">2</text>"));
        // The largest value touches the top, zero the bottom.
        assert!(out.contains(",1.0"), "{out}");
        assert!(out.contains(",35.0"), "{out}");
    }
}
