//! The picture: every request of each client's run over time, accepted or refused.

use plotters::prelude::*;

use crate::workload::{CLIENTS, Outcome};

/// Draws one row per client (`outcomes` in `CLIENTS`' order): the requests the limiter received over time, accepted (green,
/// below the line) and refused (red, above). Returns the SVG text.
pub fn svg(title: &str, runs: &[Outcome]) -> Result<String, Box<dyn std::error::Error>> {
    let mut text = String::new();
    {
        let end = runs
            .iter()
            .flat_map(|outcome| outcome.log.iter().map(|(at, _)| at.as_secs_f64()))
            .fold(1.0_f64, f64::max);
        let root = SVGBackend::with_string(&mut text, (900, 80 + 70 * runs.len() as u32))
            .into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(190)
            .build_cartesian_2d(0.0..end * 1.02, -0.5..runs.len() as f64 - 0.5)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .y_labels(runs.len())
            .y_label_formatter(&|row| {
                let index = row.round() as usize;
                CLIENTS
                    .get(index)
                    .map_or(String::new(), |(name, _)| (*name).to_owned())
            })
            .x_desc("seconds")
            .draw()?;
        // Requests are counted per column of pixels; a bar's height grows with the square root
        // of its count, accepted below the row's line, refused above it.
        let column = end / 400.0;
        let counts = |outcome: &Outcome, accepted: bool| {
            let mut counts: Vec<(u64, usize)> = Vec::new();
            for (at, _) in outcome.log.iter().filter(|(_, was)| *was == accepted) {
                let index = (at.as_secs_f64() / column) as u64;
                match counts.last_mut() {
                    Some((last, count)) if *last == index => *count += 1,
                    _ => counts.push((index, 1)),
                }
            }
            counts
        };
        let most = runs
            .iter()
            .flat_map(|outcome| [counts(outcome, true), counts(outcome, false)])
            .flatten()
            .map(|(_, count)| count)
            .max()
            .unwrap_or(1) as f64;
        for (row, outcome) in runs.iter().enumerate() {
            for (accepted, color, side) in
                [(true, GREEN.mix(0.7), -1.0), (false, RED.mix(0.7), 1.0)]
            {
                chart.draw_series(counts(outcome, accepted).into_iter().map(
                    |(index, count)| {
                        let x = index as f64 * column;
                        let height = 0.45 * (count as f64 / most).sqrt();
                        let base = row as f64;
                        Rectangle::new(
                            [(x, base), (x + column, base + side * height)],
                            color.filled(),
                        )
                    },
                ))?;
            }
        }
        root.present()?;
    }
    Ok(text)
}
