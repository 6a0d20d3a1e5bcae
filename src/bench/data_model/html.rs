//! The model report as one self-contained HTML page: inline CSS and SVG drawn here, no
//! script, no external file, so it opens offline and can be mailed or attached to a ticket.
//!
//! What it shows, in order: the verdicts; each access pattern's rate, latency and capacity
//! per call (the table's units, each index's, and their total, which is what a call costs);
//! latency over time per pattern; each table's and GSI's throughput over time against its
//! provisioned units; a heat map of the hottest partitions (seconds of the run across, one
//! row per `target key`, each cell's colour its share of DynamoDB's per-partition limit);
//! the capacity plan with the burst lines; tables and indexes with their storage; item
//! collections; and the monthly cost in total, per table and GSI, and of storage.
//!
//! Every number the browser test (tests/it/model_report_browser.rs) checks sits in an
//! element with a stable `data-figure="kind:…:field"` name and is formatted from the
//! report's own figure, so the page can be checked against `--json`. Tables scroll inside
//! their own container and plots scale with their `viewBox`, so the page reads at 1,200 px
//! and on a 360 px phone.

use std::fmt::Write;

use super::model::Prices;
use super::plan::where_in_words;
use super::report::{monthly_cost, seconds_text, thousands, truncate, Report};
use super::throughput::covered;

/// Line colours, one per pattern (repeated beyond eight).
const PALETTE: &[&str] = &[
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];
const READ_COLOUR: &str = "#1f77b4";
const WRITE_COLOUR: &str = "#e6550d";
/// Plan limits listed on the page, as in the terminal text (`--json` lists them all).
const PLAN_LIMITS_SHOWN: usize = 20;
/// Heat-map columns at most: a longer run's seconds are merged, each column showing the
/// hottest of its seconds, so an hour's run stays one readable row.
const HEAT_COLUMNS_MAX: usize = 300;
/// Heat-map cells with a hover title at most: beyond it the page would grow by megabytes.
const HEAT_TITLES_MAX: usize = 4000;
/// The heat scale's colour stops: share of the per-partition limit and RGB.
const HEAT_STOPS: [(f64, [u8; 3]); 3] = [
    (0.0, [247, 251, 255]),
    (0.5, [253, 219, 127]),
    (1.0, [215, 48, 39]),
];
/// The fill of a cell over the limit: a hatched dark pattern, unmistakable next to the
/// scale's reds (defined once per heat-map SVG, see [`heat_defs`]).
const OVER_LIMIT_FILL: &str = "url(#heat-over-limit)";

const STYLE: &str = "\
*{box-sizing:border-box}\
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;\
margin:0 auto;padding:16px 24px 48px;max-width:1200px;color:#1d232a;background:#fff}\
h1{font-size:1.6em;margin:.3em 0}\
h2{font-size:1.25em;margin:1.8em 0 .5em;border-bottom:1px solid #dde2ea;padding-bottom:.2em}\
h3{font-size:1.02em;margin:1em 0 .3em}\
p{margin:.4em 0}\
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;margin:.5em 0;max-width:100%}\
table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:.9em}\
td,th{border:1px solid #d5d9e0;padding:3px 6px;text-align:right;white-space:nowrap;vertical-align:top}\
th{background:#f3f5f8;font-weight:600;white-space:normal;text-align:center;vertical-align:bottom}\
td:first-child,td.text,th.text{text-align:left}\
td.text{white-space:normal;min-width:16em}\
td.units{text-align:left;white-space:normal;min-width:10em;max-width:14em}td.units span{display:block}td .note{font-size:.85em}\
tr.total td{font-weight:600;background:#fafbfc}\
.verdicts li{color:#a00;margin:.2em 0}\
.note{color:#5a6270;font-size:.9em}\
.chart{overflow-x:auto;-webkit-overflow-scrolling:touch}\
.chart svg{display:block;width:100%;height:auto;min-width:320px}\
.chart.heat svg{min-width:620px}\
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,480px),1fr));gap:8px 24px}\
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:.9em;margin:.2em 0 .6em}\
.legend span{display:inline-flex;align-items:center;gap:6px}\
.legend i{display:inline-block;width:22px;height:0;border-top:3px solid}\
.legend i.dash{border-top-style:dashed}\
.heat-scale{display:block;width:100%;max-width:560px;height:auto}\
svg text{font-family:inherit}\
@media (max-width:600px){body{padding:10px 10px 32px;font-size:14px}td,th{padding:3px 6px}h1{font-size:1.35em}}";

/// Escapes text for HTML (text and attribute values).
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `value` with `decimals` decimals and its whole part grouped by thousands: `12,345.68`.
fn number(value: f64, decimals: usize) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    let text = format!("{:.*}", decimals, value.abs());
    let (whole, fraction) = text.split_once('.').unwrap_or((&text, ""));
    let mut grouped = String::new();
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    // A negative value that rounds to zero is shown as zero.
    let sign = if value < 0.0 && text.chars().any(|c| c.is_ascii_digit() && c != '0') {
        "-"
    } else {
        ""
    };
    if fraction.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}.{fraction}")
    }
}

/// A share as a percentage: `0.4567` → `45.7%`.
fn percent(share: f64) -> String {
    format!("{}%", number(share * 100.0, 1))
}

/// Dollars: `$1,234.56`; below a cent, to a hundredth of one (`$0.0012`) rather than a
/// `$0.00` that reads as free.
fn dollars(value: f64) -> String {
    let decimals = if value != 0.0 && value.abs() < 0.01 {
        4
    } else {
        2
    };
    format!("${}", number(value, decimals))
}

/// An element holding one figure of the report, named for the browser test.
fn figure(tag: &str, name: &str, text: &str) -> String {
    format!(
        "<{tag} data-figure=\"{}\">{}</{tag}>",
        escape(name),
        escape(text)
    )
}

/// A table cell holding one figure.
fn figure_cell(name: &str, text: &str) -> String {
    figure("td", name, text)
}

/// Round tick values of an axis from 0: the step is 1, 2 or 5 times a power of ten, chosen
/// so about `count` steps cover `max`; the last tick is at or above `max`.
#[derive(Debug, Clone, PartialEq)]
struct Ticks {
    step: f64,
    values: Vec<f64>,
    /// Decimals the step needs, so labels show 0.05 and not 0.050000000000000003.
    decimals: usize,
}

impl Ticks {
    fn top(&self) -> f64 {
        self.values.last().copied().unwrap_or(1.0)
    }

    fn label(&self, value: f64) -> String {
        number(value, self.decimals)
    }
}

fn nice_ticks(max: f64, count: usize) -> Ticks {
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let raw = max / count.max(1) as f64;
    // The step is `multiple` × 10^`exponent`; a negative power is divided by, which gives
    // the nearest double of 0.1 where multiplying by 0.1 would not.
    let exponent = raw.log10().floor() as i32;
    let power = |exponent: i32| {
        if exponent >= 0 {
            10f64.powi(exponent)
        } else {
            1.0 / 10f64.powi(-exponent)
        }
    };
    let (multiple, exponent) = [1.0, 2.0, 5.0]
        .iter()
        .find(|m| *m * power(exponent) >= raw * (1.0 - 1e-9))
        .map_or((1.0, exponent + 1), |m| (*m, exponent));
    let step = multiple * power(exponent);
    let decimals = (-exponent).max(0) as usize;
    let scale = 10f64.powi(decimals as i32);
    let steps = (max / step - 1e-9).ceil().max(1.0) as usize;
    let values = (0..=steps)
        .map(|i| (i as f64 * step * scale).round() / scale)
        .collect();
    Ticks {
        step,
        values,
        decimals,
    }
}

/// Ticks of a time axis over a run of `seconds`: whole seconds (or round steps of them),
/// about eight, none past the run's end.
fn time_ticks(seconds: f64) -> Ticks {
    let count = (seconds.ceil() as usize).clamp(2, 8);
    let mut ticks = nice_ticks(seconds, count);
    ticks
        .values
        .retain(|value| *value <= seconds * (1.0 + 1e-9));
    ticks
}

/// How a heat-map cell is filled.
#[derive(Debug, Clone, PartialEq)]
enum HeatFill {
    /// At or under the per-partition limit: a colour of the scale.
    Scale([u8; 3]),
    /// Over it: the hatched over-limit mark.
    OverLimit,
}

impl HeatFill {
    fn attribute(&self) -> String {
        match self {
            HeatFill::Scale([red, green, blue]) => format!("rgb({red},{green},{blue})"),
            HeatFill::OverLimit => OVER_LIMIT_FILL.to_string(),
        }
    }
}

/// The fill of a cell whose load is `share` of the per-partition limit: the scale from its
/// cold end at 0 to its limit colour at 1, the over-limit mark above 1 (the seconds a
/// partition throttles, as `seconds_over_limit` counts them).
fn heat_fill(share: f64) -> HeatFill {
    if share > 1.0 {
        return HeatFill::OverLimit;
    }
    let share = if share.is_finite() {
        share.max(0.0)
    } else {
        0.0
    };
    for pair in HEAT_STOPS.windows(2) {
        let ((low, from), (high, to)) = (pair[0], pair[1]);
        if share <= high {
            let t = (share - low) / (high - low);
            let mix =
                |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * t).round() as u8;
            return HeatFill::Scale([
                mix(from[0], to[0]),
                mix(from[1], to[1]),
                mix(from[2], to[2]),
            ]);
        }
    }
    HeatFill::Scale(HEAT_STOPS[HEAT_STOPS.len() - 1].1)
}

/// The model's prices, as the report carries them.
fn prices(report: &Report) -> Prices {
    let listed = &report.cost.prices;
    Prices {
        region: report.cost.region.clone(),
        write_request_units_per_million: listed.write_request_units_per_million,
        read_request_units_per_million: listed.read_request_units_per_million,
        write_capacity_unit_hour: listed.write_capacity_unit_hour,
        read_capacity_unit_hour: listed.read_capacity_unit_hour,
        storage_gb_month: listed.storage_gb_month,
        provisioned_utilization: listed.provisioned_utilization,
    }
}

/// The page of a report saved with `--json` (its text): what the console shows when one is
/// opened there (`shoal serve --console`).
pub fn render_json(text: &[u8]) -> Result<String, String> {
    let report: Report = serde_json::from_slice(text)
        .map_err(|error| format!("not a shoal bench --json report: {error}"))?;
    Ok(render(&report))
}

/// The page.
pub fn render(report: &Report) -> String {
    let mut page = String::new();
    let _ = write!(
        page,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{} — shoal bench</title><style>{STYLE}</style></head><body>",
        escape(&report.model)
    );
    let _ = write!(
        page,
        "<h1>{}</h1><p>{} — {} s{}, {} items loaded{}</p>",
        escape(&report.model),
        escape(&report.target),
        figure("span", "run:seconds", &number(report.seconds, 1)),
        if report.interrupted {
            " (interrupted)"
        } else {
            ""
        },
        figure(
            "span",
            "run:loaded_items",
            &number(report.loaded_items as f64, 0)
        ),
        if report.load_retries > 0 {
            format!(
                ", {} load batches sent again",
                number(report.load_retries as f64, 0)
            )
        } else {
            String::new()
        }
    );
    page.push_str("<h2 id=\"verdicts\">Verdicts</h2><ul class=\"verdicts\">");
    for verdict in &report.verdicts {
        let _ = write!(page, "<li>{}</li>", escape(verdict));
    }
    page.push_str("</ul>");
    patterns_section(&mut page, report);
    latency_section(&mut page, report);
    throughput_section(&mut page, report);
    heat_section(&mut page, report);
    plan_section(&mut page, report);
    tables_section(&mut page, report);
    collections_section(&mut page, report);
    cost_section(&mut page, report);
    page.push_str("</body></html>");
    page
}

fn patterns_section(page: &mut String, report: &Report) {
    // Columns only some runs need are left out of the others, so the table fits a screen.
    let any_retries = report.patterns.iter().any(|p| p.retries > 0);
    let any_errors = report.patterns.iter().any(|p| !p.errors.is_empty());
    let _ = write!(
        page,
        "<h2 id=\"patterns\">Access patterns</h2><p class=\"note\">Capacity per call: the total is what a \
         call costs, the table's units plus every index's (a GSI's own units, an LSI's on the \
         table's throughput).</p><div class=\"scroll\"><table><tr>\
         <th rowspan=\"2\">pattern</th><th rowspan=\"2\">ops</th><th colspan=\"2\">ops/s</th>\
         <th colspan=\"4\">latency (ms)</th><th colspan=\"2\">RCU per call</th>\
         <th colspan=\"2\">WCU per call</th><th rowspan=\"2\" class=\"text\">each index's units per call</th>\
         <th colspan=\"2\">per call</th><th colspan=\"2\">$ per month</th>{}{}</tr><tr>\
         <th>run</th><th>modelled</th><th>p50</th><th>p95</th><th>p99</th><th>max</th>\
         <th>total</th><th>table</th><th>total</th><th>table</th><th>items</th><th>bytes</th>\
         <th>on-demand</th><th>provisioned</th></tr>",
        if any_retries {
            "<th rowspan=\"2\">sent again (throttled)</th>"
        } else {
            ""
        },
        if any_errors {
            "<th rowspan=\"2\" class=\"text\">errors</th>"
        } else {
            ""
        },
    );
    for p in &report.patterns {
        let name = |field: &str| format!("pattern:{}:{field}", p.name);
        let mut indexes = String::new();
        for (index, [read, write]) in &p.index_units_per_call {
            let index_name = |field: &str| format!("pattern:{}:index:{index}:{field}", p.name);
            let _ = write!(
                indexes,
                "<span>{}:<br>{} RCU, {} WCU</span>",
                escape(index),
                figure("b", &index_name("rcu_per_call"), &number(*read, 2)),
                figure("b", &index_name("wcu_per_call"), &number(*write, 2)),
            );
        }
        if indexes.is_empty() {
            indexes.push('—');
        }
        let retries = if any_retries {
            format!(
                "<td>{} ({})</td>",
                number(p.retries as f64, 0),
                number(p.throttled_attempts as f64, 0)
            )
        } else {
            String::new()
        };
        let errors = if any_errors {
            let errors: Vec<String> = p.errors.iter().map(|(c, n)| format!("{c}: {n}")).collect();
            format!("<td class=\"text\">{}</td>", escape(&errors.join(", ")))
        } else {
            String::new()
        };
        let _ = write!(
            page,
            "<tr><td>{}<br><span class=\"note\">{}</span></td>{}{}{}{}{}{}{}{}{}{}{}\
             <td class=\"units\">{indexes}</td>{}{}{}{}{retries}{errors}</tr>",
            escape(&p.name),
            escape(&p.operation),
            figure_cell(&name("operations"), &number(p.operations as f64, 0)),
            figure_cell(&name("ops_per_second"), &number(p.ops_per_second, 1)),
            figure_cell(
                &name("modelled_ops_per_second"),
                &number(p.modelled_ops_per_second, 1)
            ),
            figure_cell(&name("p50_ms"), &number(p.latency.p50_ms, 3)),
            figure_cell(&name("p95_ms"), &number(p.latency.p95_ms, 3)),
            figure_cell(&name("p99_ms"), &number(p.latency.p99_ms, 3)),
            figure_cell(&name("max_ms"), &number(p.latency.max_ms, 3)),
            figure_cell(
                &name("rcu_per_call"),
                &number(p.read_units_per_call_with_indexes(), 2)
            ),
            figure_cell(
                &name("table_rcu_per_call"),
                &number(p.read_units_per_call, 2)
            ),
            figure_cell(
                &name("wcu_per_call"),
                &number(p.write_units_per_call_with_indexes(), 2)
            ),
            figure_cell(
                &name("table_wcu_per_call"),
                &number(p.write_units_per_call, 2)
            ),
            figure_cell(&name("items_per_call"), &number(p.items_per_call, 1)),
            figure_cell(&name("bytes_per_call"), &number(p.item_bytes_per_call, 0)),
            figure_cell(
                &name("monthly_cost_on_demand"),
                &dollars(p.monthly_cost_on_demand)
            ),
            figure_cell(
                &name("monthly_cost_provisioned"),
                &dollars(p.monthly_cost_provisioned)
            ),
        );
    }
    page.push_str("</table></div>");
}

/// One line of a chart: a value per second of the run, None where there is none (a second
/// without calls has no latency).
struct Series<'a> {
    name: &'a str,
    colour: &'a str,
    dashed: bool,
    values: Vec<Option<f64>>,
}

/// A level drawn across a chart: a provisioned limit.
struct Level<'a> {
    name: String,
    colour: &'a str,
    value: f64,
}

/// The shortest last second of a run a line chart draws.
const SLIVER_SECONDS: f64 = 0.25;
const CHART_WIDTH: f64 = 480.0;
const CHART_HEIGHT: f64 = 240.0;
const CHART_LEFT: f64 = 64.0;
const CHART_RIGHT: f64 = 14.0;
const CHART_TOP: f64 = 12.0;
const CHART_BOTTOM: f64 = 42.0;

/// A line chart over the run's `seconds`, with ticked axes (seconds across, `unit` up), its
/// legend below it in HTML so it stays legible when the plot is scaled down. Each second's
/// value is drawn at the middle of the time it covers; a last second that covers less than
/// [`SLIVER_SECONDS`] of the run is left out, its rate over a few milliseconds being noise.
fn line_chart(
    title: &str,
    unit: &str,
    seconds: f64,
    series: &[Series],
    levels: &[Level],
) -> String {
    let seconds = if seconds.is_finite() && seconds > 0.0 {
        seconds
    } else {
        1.0
    };
    let shown = |second: usize| covered(seconds, second) >= SLIVER_SECONDS;
    let top_value = series
        .iter()
        .flat_map(|s| {
            s.values
                .iter()
                .enumerate()
                .filter(|(second, _)| shown(*second))
                .filter_map(|(_, value)| *value)
        })
        .chain(levels.iter().map(|l| l.value))
        .fold(0.0f64, f64::max);
    let y_ticks = nice_ticks(top_value, 5);
    let x_ticks = time_ticks(seconds);
    let (plot_width, plot_height) = (
        CHART_WIDTH - CHART_LEFT - CHART_RIGHT,
        CHART_HEIGHT - CHART_TOP - CHART_BOTTOM,
    );
    let x_top = seconds;
    let y_top = y_ticks.top();
    let x = |second: f64| CHART_LEFT + plot_width * second / x_top;
    let y = |value: f64| CHART_TOP + plot_height * (1.0 - value / y_top);
    let mut svg = format!(
        "<div class=\"chart\"><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {CHART_WIDTH} {CHART_HEIGHT}\" \
         role=\"img\" aria-label=\"{}\" font-size=\"13\">",
        escape(title)
    );
    for &value in &y_ticks.values {
        let _ = write!(
            svg,
            "<line x1=\"{CHART_LEFT}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#e3e7ee\"/>\
             <line x1=\"{:.1}\" x2=\"{CHART_LEFT}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#555\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#333\">{}</text>",
            CHART_LEFT + plot_width,
            CHART_LEFT - 5.0,
            CHART_LEFT - 8.0,
            y(value) + 4.0,
            y_ticks.label(value),
            y = y(value)
        );
    }
    let bottom = CHART_TOP + plot_height;
    for &value in &x_ticks.values {
        let _ = write!(
            svg,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{bottom:.1}\" y2=\"{:.1}\" stroke=\"#555\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#333\">{}</text>",
            bottom + 5.0,
            bottom + 18.0,
            x_ticks.label(value),
            x = x(value)
        );
    }
    let _ = write!(
        svg,
        "<path d=\"M{CHART_LEFT} {CHART_TOP}V{bottom:.1}H{:.1}\" fill=\"none\" stroke=\"#555\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#333\">second of the run (s)</text>\
         <text transform=\"translate(14 {:.1}) rotate(-90)\" text-anchor=\"middle\" fill=\"#333\">{}</text>",
        CHART_LEFT + plot_width,
        CHART_LEFT + plot_width / 2.0,
        CHART_HEIGHT - 6.0,
        CHART_TOP + plot_height / 2.0,
        escape(unit)
    );
    for level in levels {
        let _ = write!(
            svg,
            "<line x1=\"{CHART_LEFT}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{}\" \
             stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>",
            CHART_LEFT + plot_width,
            level.colour,
            y = y(level.value)
        );
    }
    for line in series {
        let dash = if line.dashed {
            " stroke-dasharray=\"5 3\""
        } else {
            ""
        };
        // Each run of seconds with values is one polyline; a lone second is a dot.
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for (second, value) in line.values.iter().enumerate() {
            match value.filter(|_| shown(second)) {
                Some(value) => {
                    if let Some(run) = runs.last_mut() {
                        let middle = second as f64 + covered(seconds, second) / 2.0;
                        run.push((x(middle), y(value)));
                    }
                }
                None => runs.push(Vec::new()),
            }
        }
        for run in runs.iter().filter(|run| !run.is_empty()) {
            if run.len() == 1 {
                let _ = write!(
                    svg,
                    "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\"/>",
                    run[0].0, run[0].1, line.colour
                );
                continue;
            }
            let points: Vec<String> = run.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
            let _ = write!(
                svg,
                "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" stroke-linejoin=\"round\"{dash} points=\"{}\"/>",
                line.colour,
                points.join(" ")
            );
        }
    }
    svg.push_str("</svg></div><div class=\"legend\">");
    for line in series {
        let _ = write!(
            svg,
            "<span><i class=\"{}\" style=\"border-color:{}\"></i>{}</span>",
            if line.dashed { "dash" } else { "" },
            line.colour,
            escape(line.name)
        );
    }
    for level in levels {
        let _ = write!(
            svg,
            "<span><i class=\"dash\" style=\"border-color:{}\"></i>{}</span>",
            level.colour,
            escape(&level.name)
        );
    }
    svg.push_str("</div>");
    svg
}

fn latency_section(page: &mut String, report: &Report) {
    page.push_str("<h2 id=\"latency\">Latency over time</h2>");
    if report.patterns.iter().all(|p| p.per_second.is_empty()) {
        page.push_str("<p>No calls were made.</p>");
        return;
    }
    let lines = |column: usize| -> Vec<Series> {
        report
            .patterns
            .iter()
            .enumerate()
            .map(|(i, p)| Series {
                name: &p.name,
                colour: PALETTE[i % PALETTE.len()],
                dashed: false,
                values: p
                    .per_second
                    .iter()
                    .map(|s| (s[0] > 0.0).then_some(s[column]))
                    .collect(),
            })
            .collect()
    };
    page.push_str("<div class=\"charts\"><div><h3>Mean latency per second</h3>");
    page.push_str(&line_chart(
        "mean latency per second",
        "ms",
        report.seconds,
        &lines(1),
        &[],
    ));
    page.push_str("</div><div><h3>Slowest call per second</h3>");
    page.push_str(&line_chart(
        "slowest call per second",
        "ms",
        report.seconds,
        &lines(2),
        &[],
    ));
    page.push_str("</div></div>");
}

fn throughput_section(page: &mut String, report: &Report) {
    page.push_str(
        "<h2 id=\"throughput\">Throughput per table and GSI</h2><p class=\"note\">Units per second at the \
         modelled rate; a table's figures include its LSIs' units, which share its \
         throughput.</p><div class=\"scroll\"><table><tr><th>table / GSI</th><th>billing</th>\
         <th>need RCU/s</th><th>need WCU/s</th><th>busiest second RCU</th>\
         <th>busiest second WCU</th><th>seconds throttled (reads)</th>\
         <th>seconds throttled (writes)</th><th class=\"text\">limits</th></tr>",
    );
    for r in &report.throughput {
        let name = |field: &str| format!("throughput:{}:{field}", r.resource);
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td>{}{}{}{}{}{}<td class=\"text\">{}</td></tr>",
            escape(&r.resource),
            escape(&r.billing_mode),
            figure_cell(&name("need_rcu"), &number(r.need[0], 1)),
            figure_cell(&name("need_wcu"), &number(r.need[1], 1)),
            figure_cell(&name("peak_rcu"), &number(r.peak[0], 1)),
            figure_cell(&name("peak_wcu"), &number(r.peak[1], 1)),
            figure_cell(
                &name("seconds_throttled_rcu"),
                &number(r.seconds_throttled[0] as f64, 0)
            ),
            figure_cell(
                &name("seconds_throttled_wcu"),
                &number(r.seconds_throttled[1] as f64, 0)
            ),
            escape(&r.limits_text())
        );
    }
    page.push_str("</table></div><div class=\"charts\">");
    for r in &report.throughput {
        let mut levels = Vec::new();
        if let Some(provisioned) = r.provisioned {
            levels.push(Level {
                name: format!("provisioned {} RCU", thousands(provisioned[0])),
                colour: READ_COLOUR,
                value: provisioned[0],
            });
            levels.push(Level {
                name: format!("provisioned {} WCU", thousands(provisioned[1])),
                colour: WRITE_COLOUR,
                value: provisioned[1],
            });
        }
        let column = |kind: usize| r.per_second.iter().map(|s| Some(s[kind])).collect();
        let series = [
            Series {
                name: "read units/s",
                colour: READ_COLOUR,
                dashed: false,
                values: column(0),
            },
            Series {
                name: "write units/s",
                colour: WRITE_COLOUR,
                dashed: false,
                values: column(1),
            },
        ];
        let _ = write!(
            page,
            "<div><h3>{} <span class=\"note\">({})</span></h3>{}</div>",
            escape(&r.resource),
            escape(&r.limits_text()),
            line_chart(
                &format!("throughput of {}", r.resource),
                "units/s",
                report.seconds,
                &series,
                &levels
            )
        );
    }
    page.push_str("</div>");
}

/// The heat map's pattern for cells over the limit.
fn heat_defs() -> &'static str {
    "<defs><pattern id=\"heat-over-limit\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" \
     patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#4a0418\"/>\
     <rect width=\"2\" height=\"6\" fill=\"#ffd0d8\"/></pattern></defs>"
}

const HEAT_WIDTH: f64 = 960.0;
const HEAT_LABEL_WIDTH: f64 = 250.0;
const HEAT_STATS_WIDTH: f64 = 170.0;
const HEAT_ROW: f64 = 22.0;
const HEAT_HEADER: f64 = 26.0;
const HEAT_FOOTER: f64 = 44.0;

fn heat_section(page: &mut String, report: &Report) {
    page.push_str(
        "<h2 id=\"hot-partitions\">Hot partitions over time</h2><p class=\"note\">Each row is one of the hottest \
         partitions of a table or GSI (`target key`), each column a second of the run; a \
         cell's colour is the partition's load that second at the modelled rate, as a share \
         of DynamoDB's per-partition limit (the larger of reads against 3,000 RCU and writes \
         against 1,000 WCU). Hatched cells are over the limit: DynamoDB would throttle \
         them, whatever burst capacity is left.</p>",
    );
    let partitions = &report.hot_partitions;
    if partitions.is_empty() {
        page.push_str("<p>No partition-keyed requests.</p>");
        return;
    }
    let seconds = partitions
        .iter()
        .map(|p| p.limit_share_per_second.len())
        .max()
        .unwrap_or(0)
        .max(1);
    let per_column = seconds.div_ceil(HEAT_COLUMNS_MAX);
    let columns = seconds.div_ceil(per_column);
    let grid_left = HEAT_LABEL_WIDTH;
    let grid_width = HEAT_WIDTH - HEAT_LABEL_WIDTH - HEAT_STATS_WIDTH;
    // Time runs across at the run's length, so a last second that covers a sliver of the
    // run is a sliver of a column.
    let run_seconds = report.seconds.max(1e-3);
    let x_at = |second: f64| grid_left + grid_width * second.min(run_seconds) / run_seconds;
    let height = HEAT_HEADER + HEAT_ROW * partitions.len() as f64 + HEAT_FOOTER;
    let titles = partitions.len() * columns <= HEAT_TITLES_MAX;
    let mut svg = format!(
        "<div class=\"chart heat\"><svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {HEAT_WIDTH} {height}\" \
         role=\"img\" aria-label=\"hot partitions over time\" font-size=\"12\">{}\
         <text x=\"4\" y=\"16\" font-weight=\"600\" fill=\"#333\">target key</text>\
         <text x=\"{:.1}\" y=\"16\" text-anchor=\"end\" font-weight=\"600\" fill=\"#333\">average</text>\
         <text x=\"{:.1}\" y=\"16\" text-anchor=\"end\" font-weight=\"600\" fill=\"#333\">s over</text>",
        heat_defs(),
        HEAT_WIDTH - 84.0,
        HEAT_WIDTH - 6.0,
    );
    for (row, partition) in partitions.iter().enumerate() {
        let top = HEAT_HEADER + HEAT_ROW * row as f64;
        let label_target = truncate(&partition.target, 20);
        let label_key = truncate(&partition.key, 34 - label_target.chars().count().min(20));
        let _ = write!(
            svg,
            "<text x=\"4\" y=\"{:.1}\"><title>{} {}</title><tspan fill=\"#5a6270\">{}</tspan> \
             <tspan font-weight=\"600\" fill=\"#1d232a\">{}</tspan></text>",
            top + 15.0,
            escape(&partition.target),
            escape(&partition.key),
            escape(&label_target),
            escape(&label_key)
        );
        for column in 0..columns {
            let from = column * per_column;
            let to = (from + per_column).min(partition.limit_share_per_second.len());
            let share = partition
                .limit_share_per_second
                .get(from..to)
                .unwrap_or(&[])
                .iter()
                .copied()
                .fold(0.0f64, f64::max);
            let fill = heat_fill(share).attribute();
            let (x, x_end) = (x_at(from as f64), x_at((from + per_column) as f64));
            let title = if titles {
                let when = if per_column == 1 {
                    format!("second {from}")
                } else {
                    format!("seconds {from}–{}", to.saturating_sub(1))
                };
                format!("<title>{when}: {} of the limit</title>", percent(share))
            } else {
                String::new()
            };
            let _ = write!(
                svg,
                "<rect x=\"{x:.2}\" y=\"{:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"{fill}\">{title}</rect>",
                top + 1.0,
                // A hair wider, so neighbouring cells meet without a seam.
                x_end - x + 0.05,
                HEAT_ROW - 2.0
            );
        }
        let figure_name =
            |field: &str| format!("partition:{}:{}:{field}", partition.target, partition.key);
        let over_colour = if partition.seconds_over_limit > 0 {
            "#a00"
        } else {
            "#1d232a"
        };
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" data-figure=\"{}\">{}</text>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"{over_colour}\" data-figure=\"{}\">{}</text>",
            HEAT_WIDTH - 84.0,
            top + 15.0,
            escape(&figure_name("limit_share")),
            percent(partition.limit_share),
            HEAT_WIDTH - 6.0,
            top + 15.0,
            escape(&figure_name("seconds_over_limit")),
            number(partition.seconds_over_limit as f64, 0)
        );
    }
    // The time axis under the grid.
    let bottom = HEAT_HEADER + HEAT_ROW * partitions.len() as f64;
    let x_ticks = time_ticks(run_seconds);
    let _ = write!(
        svg,
        "<line x1=\"{grid_left}\" x2=\"{:.1}\" y1=\"{bottom:.1}\" y2=\"{bottom:.1}\" stroke=\"#555\"/>",
        grid_left + grid_width
    );
    for &value in &x_ticks.values {
        let x = x_at(value);
        let _ = write!(
            svg,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{bottom:.1}\" y2=\"{:.1}\" stroke=\"#555\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#333\">{}</text>",
            bottom + 5.0,
            bottom + 18.0,
            x_ticks.label(value)
        );
    }
    let _ = write!(
        svg,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#333\">second of the run (s){}</text></svg></div>",
        grid_left + grid_width / 2.0,
        bottom + 36.0,
        if per_column > 1 {
            format!(", {per_column} s a column (its hottest)")
        } else {
            String::new()
        }
    );
    page.push_str(&svg);
    page.push_str(&heat_scale());
    page.push_str(
        "<p class=\"note\">average: the share at the partition's mean load over the run \
         (what the verdicts and the plan use); s over: seconds of the run over the limit.</p>",
    );
}

/// The heat map's colour scale: 0% to 100% of the per-partition limit, then the over-limit
/// mark.
fn heat_scale() -> String {
    let mut svg = String::from(
        "<svg class=\"heat-scale\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 560 48\" \
         role=\"img\" aria-label=\"heat scale\" font-size=\"12\"><defs>\
         <linearGradient id=\"heat-scale-gradient\">",
    );
    for (share, [red, green, blue]) in HEAT_STOPS {
        let _ = write!(
            svg,
            "<stop offset=\"{share}\" stop-color=\"rgb({red},{green},{blue})\"/>"
        );
    }
    svg.push_str("</linearGradient><pattern id=\"heat-scale-over\" width=\"6\" height=\"6\" \
        patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" \
        fill=\"#4a0418\"/><rect width=\"2\" height=\"6\" fill=\"#ffd0d8\"/></pattern></defs>");
    let (left, width) = (10.0, 320.0);
    let _ = write!(
        svg,
        "<rect x=\"{left}\" y=\"4\" width=\"{width}\" height=\"16\" fill=\"url(#heat-scale-gradient)\" stroke=\"#999\"/>"
    );
    for share in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let x = left + width * share;
        let _ = write!(
            svg,
            "<line x1=\"{x}\" x2=\"{x}\" y1=\"20\" y2=\"25\" stroke=\"#555\"/>\
             <text x=\"{x}\" y=\"38\" text-anchor=\"middle\" fill=\"#333\">{:.0}%</text>",
            share * 100.0
        );
    }
    svg.push_str(
        "<rect x=\"356\" y=\"4\" width=\"28\" height=\"16\" fill=\"url(#heat-scale-over)\" stroke=\"#999\"/>\
         <text x=\"390\" y=\"16\" fill=\"#333\">over 100%: throttled</text>\
         <text x=\"356\" y=\"38\" fill=\"#5a6270\">of the per-partition limit</text></svg>",
    );
    svg
}

fn plan_section(page: &mut String, report: &Report) {
    let plan = &report.plan;
    let _ = write!(
        page,
        "<h2 id=\"plan\">Capacity plan</h2><p><b>First limit:</b> {}</p>",
        figure("span", "plan:first", &plan.first)
    );
    let mut bursts = String::new();
    for resource in &report.throughput {
        for (kind, unit) in [(0, "RCU"), (1, "WCU")] {
            if let Some(seconds) = resource.burst_seconds[kind] {
                let _ = write!(
                    bursts,
                    "<li>burst capacity carries the {unit} need of {} for {} s{}</li>",
                    escape(&resource.resource),
                    figure(
                        "b",
                        &format!("burst:{}:{}", resource.resource, unit.to_lowercase()),
                        &number(seconds, 0)
                    ),
                    if seconds >= 120.0 {
                        format!(" ({})", seconds_text(seconds))
                    } else {
                        String::new()
                    }
                );
            }
        }
    }
    if !bursts.is_empty() {
        let _ = write!(page, "<ul>{bursts}</ul>");
    }
    if plan.limits.is_empty() {
        page.push_str("<p>No limit is reached at any multiple of the modelled rate.</p>");
    } else {
        page.push_str(
            "<h3>Limits, by the multiple of the modelled rate that reaches them</h3>\
             <div class=\"scroll\"><table><tr><th>multiple</th><th class=\"text\">limit</th>\
             <th>need</th><th>limit</th></tr>",
        );
        for (i, limit) in plan.limits.iter().take(PLAN_LIMITS_SHOWN).enumerate() {
            let _ = write!(
                page,
                "<tr{}><td data-figure=\"plan:limit:{i}:multiple\">{}x</td><td class=\"text\">{}</td>\
                 <td>{} {}</td><td>{} {}</td></tr>",
                if limit.multiple < 1.0 {
                    " style=\"color:#a00\""
                } else {
                    ""
                },
                number(limit.multiple, 2),
                escape(&where_in_words(limit)),
                number(limit.need, 1),
                escape(&limit.unit),
                number(limit.limit, 1),
                escape(&limit.unit)
            );
        }
        page.push_str("</table></div>");
        if plan.limits.len() > PLAN_LIMITS_SHOWN {
            let _ = write!(
                page,
                "<p class=\"note\">… and {} more (<code>--json</code> lists them all).</p>",
                plan.limits.len() - PLAN_LIMITS_SHOWN
            );
        }
    }
    if !plan.provisioned.is_empty() {
        page.push_str(
            "<h3>Provisioned capacity: declared and needed</h3><div class=\"scroll\"><table>\
             <tr><th>table / GSI</th><th>declared RCU</th><th>declared WCU</th>\
             <th>declared $/month</th><th>needed RCU</th><th>needed WCU</th>\
             <th>needed $/month</th><th>auto-scaling reads</th><th>auto-scaling writes</th>\
             <th>target utilisation</th></tr>",
        );
        for p in &plan.provisioned {
            let name = |field: &str| format!("provisioned:{}:{field}", p.resource);
            let _ = write!(
                page,
                "<tr><td>{}</td><td>{}</td><td>{}</td>{}<td>{}</td><td>{}</td>{}<td>{}–{}</td>\
                 <td>{}–{}</td><td>{:.0}%</td></tr>",
                escape(&p.resource),
                thousands(p.declared[0]),
                thousands(p.declared[1]),
                figure_cell(&name("declared_monthly"), &dollars(p.declared_monthly)),
                thousands(p.needed[0].ceil()),
                thousands(p.needed[1].ceil()),
                figure_cell(&name("needed_monthly"), &dollars(p.needed_monthly)),
                thousands(p.autoscaling_min[0]),
                thousands(p.autoscaling_max[0]),
                thousands(p.autoscaling_min[1]),
                thousands(p.autoscaling_max[1]),
                p.target_utilization * 100.0
            );
        }
        page.push_str("</table></div>");
    }
}

/// Storage cost per month of `bytes` billed.
fn storage_monthly(report: &Report, bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 30) * report.cost.prices.storage_gb_month
}

fn tables_section(page: &mut String, report: &Report) {
    page.push_str(
        "<h2 id=\"tables\">Tables and indexes</h2><p class=\"note\">Sizes as DescribeTable reports them; \
         billed bytes add the 100 bytes DynamoDB bills with every item and index entry.</p>\
         <div class=\"scroll\"><table><tr><th>table / index</th><th>items</th><th>bytes</th>\
         <th>billed bytes (with indexes)</th><th>storage $/month</th>\
         <th>index writes per base write</th><th>index WCU per base WCU</th></tr>",
    );
    for table in &report.tables {
        let billed = table.billed_bytes();
        let name = |field: &str| format!("table:{}:{field}", table.name);
        let _ = write!(
            page,
            "<tr><td>{}</td>{}{}{}{}<td></td><td></td></tr>",
            escape(&table.name),
            figure_cell(&name("item_count"), &number(table.item_count as f64, 0)),
            figure_cell(&name("size_bytes"), &number(table.size_bytes as f64, 0)),
            figure_cell(&name("billed_bytes"), &number(billed as f64, 0)),
            figure_cell(
                &name("storage_monthly"),
                &dollars(storage_monthly(report, billed))
            ),
        );
        for index in &table.indexes {
            let name = |field: &str| format!("index:{}/{}:{field}", table.name, index.name);
            let _ = write!(
                page,
                "<tr><td>&nbsp;&nbsp;{}</td>{}{}<td></td><td></td>{}{}</tr>",
                escape(&index.name),
                figure_cell(&name("item_count"), &number(index.item_count as f64, 0)),
                figure_cell(&name("size_bytes"), &number(index.size_bytes as f64, 0)),
                figure_cell(
                    &name("writes_per_base_write"),
                    &number(index.writes_per_base_write, 2)
                ),
                figure_cell(
                    &name("write_units_per_base_write_unit"),
                    &number(index.write_units_per_base_write_unit, 2)
                ),
            );
        }
    }
    page.push_str("</table></div>");
}

fn collections_section(page: &mut String, report: &Report) {
    if report.item_collections.is_empty() {
        return;
    }
    page.push_str(
        "<h2 id=\"item-collections\">Largest item collections</h2><div class=\"scroll\"><table><tr><th>table</th>\
         <th>key</th><th>estimated GB</th><th>grows up to GB/h</th><th>10 GB in at most</th></tr>",
    );
    for c in &report.item_collections {
        let days = c
            .days_to_limit
            .map_or("not growing".to_string(), super::report::duration_text);
        let _ = write!(
            page,
            "<tr><td>{}</td><td class=\"text\">{}</td><td>{}–{}</td><td>{}</td><td>{}</td></tr>",
            escape(&c.table),
            escape(&c.key),
            c.size_estimate_gb[0],
            c.size_estimate_gb[1],
            number(c.growth_gb_per_hour, 6),
            escape(&days)
        );
    }
    page.push_str("</table></div>");
}

fn cost_section(page: &mut String, report: &Report) {
    let prices = prices(report);
    let cost = &report.cost;
    let _ = write!(
        page,
        "<h2 id=\"cost\">Cost per month ({} prices)</h2><p>At the modelled rate: on-demand {}, \
         provisioned {} (at {:.0}% utilisation), storage {}.</p>",
        escape(&cost.region),
        figure(
            "b",
            "cost:on_demand_monthly",
            &dollars(cost.on_demand_monthly)
        ),
        figure(
            "b",
            "cost:provisioned_monthly",
            &dollars(cost.provisioned_monthly)
        ),
        cost.prices.provisioned_utilization * 100.0,
        figure("b", "cost:storage_monthly", &dollars(cost.storage_monthly)),
    );
    page.push_str(
        "<h3>Per table and GSI</h3><p class=\"note\">Each one's need at the modelled rate \
         (patterns with fewer than 20 operations left out, as in the verdicts), priced \
         on-demand and provisioned at the target utilisation; storage from the billed bytes \
         of the table and its indexes.</p><div class=\"scroll\"><table><tr><th>table / GSI</th>\
         <th>need RCU/s</th><th>need WCU/s</th><th>on-demand $/month</th>\
         <th>provisioned $/month</th><th>storage $/month</th></tr>",
    );
    let mut totals = [0.0f64; 3];
    for r in &report.throughput {
        let (on_demand, provisioned) = monthly_cost(&prices, r.need[0], r.need[1]);
        let storage = if r.is_index {
            None
        } else {
            report
                .tables
                .iter()
                .find(|t| t.name == r.resource)
                .map(|t| storage_monthly(report, t.billed_bytes()))
        };
        totals[0] += on_demand;
        totals[1] += provisioned;
        totals[2] += storage.unwrap_or(0.0);
        let name = |field: &str| format!("cost:{}:{field}", r.resource);
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td>{}{}<td>{}</td></tr>",
            escape(&r.resource),
            number(r.need[0], 1),
            number(r.need[1], 1),
            figure_cell(&name("on_demand_monthly"), &dollars(on_demand)),
            figure_cell(&name("provisioned_monthly"), &dollars(provisioned)),
            storage.map_or(
                if r.is_index {
                    "with its table".to_string()
                } else {
                    "—".to_string()
                },
                dollars
            )
        );
    }
    let _ = write!(
        page,
        "<tr class=\"total\"><td>total</td><td></td><td></td><td>{}</td><td>{}</td><td>{}</td></tr>\
         </table></div><p class=\"note\">Prices: {} per million write request units, {} per \
         million read request units; {} per WCU-hour, {} per RCU-hour; {} per GB-month.</p>",
        dollars(totals[0]),
        dollars(totals[1]),
        dollars(totals[2]),
        dollars_exact(cost.prices.write_request_units_per_million),
        dollars_exact(cost.prices.read_request_units_per_million),
        dollars_exact(cost.prices.write_capacity_unit_hour),
        dollars_exact(cost.prices.read_capacity_unit_hour),
        dollars_exact(cost.prices.storage_gb_month),
    );
}

/// A price as listed: `$0.00065`, not rounded to cents.
fn dollars_exact(value: f64) -> String {
    format!("${value}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heat_scale_runs_from_cold_to_the_limit_colour_then_marks_what_is_over() {
        assert_eq!(heat_fill(0.0), HeatFill::Scale(HEAT_STOPS[0].1));
        assert_eq!(heat_fill(0.0).attribute(), "rgb(247,251,255)");
        assert_eq!(heat_fill(0.5), HeatFill::Scale(HEAT_STOPS[1].1));
        // At the limit exactly a partition is not throttled: the limit colour.
        assert_eq!(heat_fill(1.0), HeatFill::Scale([215, 48, 39]));
        assert_eq!(heat_fill(1.0).attribute(), "rgb(215,48,39)");
        // Anything over it is the hatched mark, however little over.
        assert_eq!(heat_fill(1.0001), HeatFill::OverLimit);
        assert_eq!(heat_fill(7.0).attribute(), OVER_LIMIT_FILL);
        // Hotter is redder: green falls monotonically along the scale.
        let greens: Vec<u8> = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
            .iter()
            .map(|share| match heat_fill(*share) {
                HeatFill::Scale(rgb) => rgb[1],
                HeatFill::OverLimit => panic!("{share} is not over the limit"),
            })
            .collect();
        assert!(greens.windows(2).all(|w| w[0] >= w[1]), "{greens:?}");
        // Nonsense stays on the scale's cold end rather than painting a wrong colour.
        assert_eq!(heat_fill(-0.5), heat_fill(0.0));
        assert_eq!(heat_fill(f64::NAN), heat_fill(0.0));
    }

    #[test]
    fn axis_ticks_are_round_numbers_covering_the_range() {
        assert_eq!(nice_ticks(7.3, 5).values, vec![0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(
            nice_ticks(100.0, 5).values,
            vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        assert_eq!(
            nice_ticks(0.034, 5).values,
            vec![0.0, 0.01, 0.02, 0.03, 0.04]
        );
        assert_eq!(
            nice_ticks(12_345.0, 5).values,
            vec![0.0, 5000.0, 10000.0, 15000.0]
        );
        assert_eq!(nice_ticks(1.0, 5).values.len(), 6);
        assert_eq!(nice_ticks(1.0, 5).top(), 1.0);
        // A run of 3 s over 8 ticks: half seconds.
        assert_eq!(
            nice_ticks(3.0, 8).values,
            vec![0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
        );
        // Seconds of a run are ticked in whole seconds.
        assert_eq!(time_ticks(4.0).values, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        // None past the run's end.
        assert_eq!(time_ticks(4.002).values, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(time_ticks(1.0).values, vec![0.0, 0.5, 1.0]);
        assert_eq!(time_ticks(60.0).values.last(), Some(&60.0));
        assert_eq!(time_ticks(600.0).step, 100.0);
        // Nothing to plot still gives an axis.
        assert_eq!(nice_ticks(0.0, 5).top(), 1.0);
        // Labels carry the decimals the step needs, and no float noise.
        let ticks = nice_ticks(0.34, 5);
        assert_eq!(ticks.step, 0.1);
        let labels: Vec<String> = ticks.values.iter().map(|v| ticks.label(*v)).collect();
        assert_eq!(labels, ["0.0", "0.1", "0.2", "0.3", "0.4"]);
        let ticks = nice_ticks(45_000.0, 4);
        assert_eq!(ticks.label(ticks.values[1]), "20,000");
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(number(1234567.891, 2), "1,234,567.89");
        assert_eq!(number(999.4, 0), "999");
        assert_eq!(number(-1234.5, 1), "-1,234.5");
        assert_eq!(number(-0.001, 2), "0.00");
        assert_eq!(percent(1.2346), "123.5%");
        assert_eq!(dollars(0.5), "$0.50");
        assert_eq!(dollars(0.00123), "$0.0012");
        assert_eq!(dollars(0.0), "$0.00");
    }
}
