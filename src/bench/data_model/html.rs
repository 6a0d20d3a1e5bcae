//! The model report as one self-contained HTML page (no scripts, no external files): the
//! tables of the terminal report, and inline SVG plots of latency over time per pattern,
//! capacity per pattern, and a heat map of the hottest partitions' load.

use std::fmt::Write;

use super::report::Report;

const PALETTE: &[&str] = &[
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 240.0;
const MARGIN: f64 = 40.0;

/// Escapes text for HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page.
pub fn render(report: &Report) -> String {
    let mut page = String::new();
    let _ = write!(
        page,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{} — shoal bench</title>\
         <style>body{{font-family:sans-serif;margin:2em;max-width:1100px}}\
         table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}\
         th:first-child,td:first-child{{text-align:left}}.verdict{{color:#a00}}</style></head><body>",
        escape(&report.model)
    );
    let _ = write!(
        page,
        "<h1>{}</h1><p>{} — {:.1} s{}, {} items loaded</p>",
        escape(&report.model),
        escape(&report.target),
        report.seconds,
        if report.interrupted {
            " (interrupted)"
        } else {
            ""
        },
        report.loaded_items
    );
    page.push_str("<h2>Verdicts</h2><ul>");
    for verdict in &report.verdicts {
        let _ = write!(page, "<li class=\"verdict\">{}</li>", escape(verdict));
    }
    page.push_str(
        "</ul><h2>Access patterns</h2><table><tr><th>pattern</th><th>operation</th>\
        <th>ops</th><th>ops/s</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>max ms</th>\
        <th>RCU/call</th><th>WCU/call</th><th>items/call</th><th>bytes/call</th>\
        <th>$/month on-demand</th><th>$/month provisioned</th><th>errors</th></tr>",
    );
    for p in &report.patterns {
        let errors: Vec<String> = p.errors.iter().map(|(c, n)| format!("{c}: {n}")).collect();
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td><td>{:.3}</td><td>{:.3}</td>\
             <td>{:.3}</td><td>{:.3}</td><td>{:.2}</td><td>{:.2}</td><td>{:.1}</td><td>{:.0}</td>\
             <td>{:.2}</td><td>{:.2}</td><td>{}</td></tr>",
            escape(&p.name),
            escape(&p.operation),
            p.operations,
            p.ops_per_second,
            p.latency.p50_ms,
            p.latency.p95_ms,
            p.latency.p99_ms,
            p.latency.max_ms,
            p.read_units_per_call,
            p.write_units_per_call,
            p.items_per_call,
            p.item_bytes_per_call,
            p.monthly_cost_on_demand,
            p.monthly_cost_provisioned,
            escape(&errors.join(", "))
        );
    }
    page.push_str("</table><h2>Mean latency over time (ms, per second of the run)</h2>");
    page.push_str(&latency_plot(report));
    page.push_str("<h2>Capacity per call (table and indexes, read + write units)</h2>");
    page.push_str(&capacity_plot(report));
    page.push_str("<h2>Partition load (share of the per-partition limit)</h2>");
    page.push_str(&heat_map(report));
    page.push_str(
        "<h2>Tables and indexes</h2><table><tr><th>table / index</th><th>items</th>\
        <th>bytes</th><th>index writes per base write</th><th>index WCU per base WCU</th></tr>",
    );
    for table in &report.tables {
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td></td><td></td></tr>",
            escape(&table.name),
            table.item_count,
            table.size_bytes
        );
        for index in &table.indexes {
            let _ = write!(
                page,
                "<tr><td>&nbsp;&nbsp;{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td></tr>",
                escape(&index.name),
                index.item_count,
                index.size_bytes,
                index.writes_per_base_write,
                index.write_units_per_base_write_unit
            );
        }
    }
    let _ = write!(
        page,
        "</table><h2>Cost per month ({} prices)</h2><p>on-demand ${:.2}, provisioned ${:.2} \
         (at {:.0}% utilisation), storage ${:.2}</p></body></html>",
        escape(&report.cost.region),
        report.cost.on_demand_monthly,
        report.cost.provisioned_monthly,
        report.cost.prices.provisioned_utilization * 100.0,
        report.cost.storage_monthly
    );
    page
}

fn svg_open(height: f64) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" style=\"border:1px solid #ddd\">"
    )
}

fn latency_plot(report: &Report) -> String {
    let seconds = report
        .patterns
        .iter()
        .map(|p| p.per_second.len())
        .max()
        .unwrap_or(0)
        .max(1);
    let top = report
        .patterns
        .iter()
        .flat_map(|p| p.per_second.iter().map(|s| s[1]))
        .fold(0.0f64, f64::max)
        .max(1e-3);
    let mut svg = svg_open(HEIGHT);
    let plot_width = WIDTH - 2.0 * MARGIN;
    let plot_height = HEIGHT - 2.0 * MARGIN;
    let _ = write!(
        svg,
        "<text x=\"4\" y=\"{}\" font-size=\"11\">{top:.3} ms</text><text x=\"4\" y=\"{}\" font-size=\"11\">0</text>\
         <text x=\"{}\" y=\"{}\" font-size=\"11\">{seconds} s</text>",
        MARGIN,
        HEIGHT - MARGIN,
        WIDTH - MARGIN - 20.0,
        HEIGHT - MARGIN + 14.0
    );
    for (i, pattern) in report.patterns.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let points: Vec<String> = pattern
            .per_second
            .iter()
            .enumerate()
            .filter(|(_, s)| s[0] > 0.0)
            .map(|(second, s)| {
                let x = MARGIN + plot_width * second as f64 / seconds as f64;
                let y = HEIGHT - MARGIN - plot_height * s[1] / top;
                format!("{x:.1},{y:.1}")
            })
            .collect();
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>\
             <text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"{color}\">{}</text>",
            points.join(" "),
            MARGIN + 8.0,
            MARGIN + 14.0 * (i as f64 + 1.0),
            escape(&pattern.name)
        );
    }
    svg.push_str("</svg>");
    svg
}

fn capacity_plot(report: &Report) -> String {
    let per_call: Vec<f64> = report
        .patterns
        .iter()
        .map(|p| {
            p.read_units_per_call
                + p.write_units_per_call
                + p.index_units_per_call
                    .values()
                    .map(|u| u[0] + u[1])
                    .sum::<f64>()
        })
        .collect();
    let top = per_call.iter().copied().fold(0.0f64, f64::max).max(1e-3);
    let row = 22.0;
    let height = MARGIN + row * per_call.len() as f64;
    let mut svg = svg_open(height);
    for (i, (pattern, units)) in report.patterns.iter().zip(&per_call).enumerate() {
        let y = 10.0 + row * i as f64;
        let width = (WIDTH - 260.0) * units / top;
        let _ = write!(
            svg,
            "<text x=\"4\" y=\"{}\" font-size=\"11\">{}</text>\
             <rect x=\"180\" y=\"{y}\" width=\"{width:.1}\" height=\"16\" fill=\"{}\"/>\
             <text x=\"{}\" y=\"{}\" font-size=\"11\">{units:.2}</text>",
            y + 12.0,
            escape(&pattern.name),
            PALETTE[i % PALETTE.len()],
            184.0 + width,
            y + 12.0
        );
    }
    svg.push_str("</svg>");
    svg
}

fn heat_map(report: &Report) -> String {
    if report.hot_partitions.is_empty() {
        return "<p>No partition-keyed requests.</p>".to_string();
    }
    let row = 22.0;
    let height = 10.0 + row * report.hot_partitions.len() as f64;
    let mut svg = svg_open(height);
    for (i, partition) in report.hot_partitions.iter().enumerate() {
        let y = 5.0 + row * i as f64;
        let share = partition.limit_share.min(2.0) / 2.0;
        // Green below half the limit, through yellow, to red at twice the limit.
        let red = (255.0 * (share * 2.0).min(1.0)) as u8;
        let green = (255.0 * (2.0 - share * 2.0).min(1.0)) as u8;
        let _ = write!(
            svg,
            "<rect x=\"4\" y=\"{y}\" width=\"300\" height=\"18\" fill=\"rgb({red},{green},60)\"/>\
             <text x=\"10\" y=\"{}\" font-size=\"11\">{} {}</text>\
             <text x=\"320\" y=\"{}\" font-size=\"11\">{:.0}% — {:.1} RCU/s, {:.1} WCU/s</text>",
            y + 13.0,
            escape(&partition.target),
            escape(&partition.key),
            y + 13.0,
            partition.limit_share * 100.0,
            partition.read_units_per_second,
            partition.write_units_per_second
        );
    }
    svg.push_str("</svg>");
    svg
}
