//! The `--html` page of `shoal bench --model` in a real browser: headless Chromium opens it
//! and the test checks that no script error is logged, that every figure the page shows
//! (each element with a `data-figure` name) equals the same run's `--json` figure as
//! formatted, and takes screenshots at 1,200 px and 360 px wide.
//!
//! The screenshots (and the page and report they show) are kept in
//! `target/bench-report-screenshots/` (`$CARGO_TARGET_DIR/bench-report-screenshots/` when it
//! is set) for a person to look at. Without Chromium the test prints a skip notice and
//! passes, unless `CI` is set: there it fails, saying how to install it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Where Debian's `chromium` package puts the browser.
const CHROMIUM_PATHS: [&str; 2] = ["/usr/bin/chromium", "/usr/bin/chromium-browser"];
/// A browser that has not finished a page by then is stuck.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);

/// A provisioned table whose writes outrun its units and its GSI's (burst lines), items of
/// about 7 KB (8 WCU a write) of which 80% go to one customer: that partition runs over
/// DynamoDB's 1,000 WCU a second at the modelled 300 calls a second, so the heat map shows
/// cells over the limit; a GetItem and a GSI Query beside.
fn browser_model() -> Value {
    json!({
        "name": "orders in a browser",
        "tables": [{
            "TableName": "Orders",
            "AttributeDefinitions": [
                {"AttributeName": "customer", "AttributeType": "S"},
                {"AttributeName": "order", "AttributeType": "N"},
                {"AttributeName": "status", "AttributeType": "S"}
            ],
            "KeySchema": [
                {"AttributeName": "customer", "KeyType": "HASH"},
                {"AttributeName": "order", "KeyType": "RANGE"}
            ],
            "GlobalSecondaryIndexes": [{
                "IndexName": "ByStatus",
                "KeySchema": [{"AttributeName": "status", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"},
                "ProvisionedThroughput": {"ReadCapacityUnits": 50, "WriteCapacityUnits": 100}
            }],
            "BillingMode": "PROVISIONED",
            "ProvisionedThroughput": {"ReadCapacityUnits": 100, "WriteCapacityUnits": 400}
        }],
        "generators": {
            "customer": {"type": "string", "prefix": "c#", "cardinality": 20,
                         "distribution": {"hot": {"share": 0.8, "keys": 1}}},
            "order": {"type": "number", "range": [1, 100000]},
            "status": {"type": "string", "prefix": "s#", "cardinality": 2},
            "pad": {"type": "string", "length": [7000, 7000], "cardinality": 4}
        },
        "load": [{"table": "Orders", "count": 100, "item": {
            "customer": {"S": "${customer}"}, "order": {"N": "${order}"}, "status": {"S": "${status}"}
        }}],
        "patterns": [
            {"name": "place", "operation": "PutItem", "weight": 3, "request": {
                "TableName": "Orders",
                "Item": {"customer": {"S": "${customer}"}, "order": {"N": "${order}"},
                         "status": {"S": "${status}"}, "pad": {"S": "${pad}"}}
            }},
            {"name": "look", "operation": "GetItem", "weight": 1, "request": {
                "TableName": "Orders", "Key": {"customer": {"S": "${customer}"}, "order": {"N": "${order}"}}
            }},
            {"name": "by status", "operation": "Query", "weight": 1, "request": {
                "TableName": "Orders", "IndexName": "ByStatus", "Limit": 10,
                "KeyConditionExpression": "#s = :s",
                "ExpressionAttributeNames": {"#s": "status"},
                "ExpressionAttributeValues": {":s": {"S": "${status}"}}
            }}
        ],
        "run": {"seconds": 4, "rate": 300, "concurrency": 4, "seed": 3}
    })
}

fn chromium() -> Option<&'static str> {
    CHROMIUM_PATHS
        .into_iter()
        .find(|path| Path::new(path).exists())
}

/// `target/` (or `$CARGO_TARGET_DIR`): the tests' scratch directory is `target/tmp`.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .unwrap()
            .to_path_buf(),
    }
}

/// Runs headless Chromium on `page` with `extra` arguments: its stdout and stderr.
fn run_chromium(chromium: &str, page: &Path, extra: &[String]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).unwrap();
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > BROWSER_TIMEOUT {
            child.kill().unwrap();
            panic!(
                "chromium did not finish {} within {BROWSER_TIMEOUT:?}",
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (stdout, stderr) = (out.join().unwrap(), err.join().unwrap());
    assert!(status.success(), "chromium {extra:?}: {status}\n{stderr}");
    (stdout, stderr)
}

/// Script errors and console messages the page caused: the page has no script, so any is
/// a fault.
fn page_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.contains("Uncaught") || line.contains(":CONSOLE"))
        .collect()
}

fn unescape(text: &str) -> String {
    text.replace("&nbsp;", "\u{a0}")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Every element with a `data-figure` name in the dumped DOM: name → its text. The page
/// puts nothing but text inside such an element.
fn figures(dom: &str) -> BTreeMap<String, String> {
    let mut figures = BTreeMap::new();
    let marker = "data-figure=\"";
    let mut rest = dom;
    while let Some(at) = rest.find(marker) {
        rest = &rest[at + marker.len()..];
        let name_end = rest.find('"').unwrap();
        let name = unescape(&rest[..name_end]);
        let text_start = rest.find('>').unwrap() + 1;
        let text_end = text_start + rest[text_start..].find('<').unwrap();
        let text = unescape(&rest[text_start..text_end]);
        assert!(
            figures.insert(name.clone(), text).is_none(),
            "figure {name} shown twice"
        );
        rest = &rest[text_end..];
    }
    figures
}

/// A number as the page shows it (`$1,234.50`, `45.7%`, `2.50x`, `1,200`): its value and
/// the half unit of its last decimal, the most its rounding may be off by.
fn shown_number(text: &str) -> Option<(f64, f64)> {
    let text = text.trim();
    let percent = text.ends_with('%');
    let digits: String = text
        .trim_start_matches('$')
        .trim_end_matches(['%', 'x'])
        .chars()
        .filter(|c| *c != ',')
        .collect();
    let value: f64 = digits.parse().ok()?;
    let decimals = digits.split_once('.').map_or(0, |(_, f)| f.len());
    let rounding = 0.5 * 10f64.powi(-(decimals as i32));
    if percent {
        Some((value / 100.0, rounding / 100.0))
    } else {
        Some((value, rounding))
    }
}

fn number(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

/// Storage the report's prices bill for `bytes` a month.
fn storage_monthly(report: &Value, bytes: f64) -> f64 {
    bytes / f64::from(1u32 << 30) * number(&report["cost"]["prices"]["storage_gb_month"])
}

/// What every figure of the page should show, from the JSON report: name → value.
fn expected_figures(report: &Value) -> (BTreeMap<String, f64>, BTreeMap<String, String>) {
    let mut numbers = BTreeMap::new();
    let mut texts = BTreeMap::new();
    numbers.insert("run:seconds".to_string(), number(&report["seconds"]));
    numbers.insert(
        "run:loaded_items".to_string(),
        number(&report["loaded_items"]),
    );
    for pattern in report["patterns"].as_array().unwrap() {
        let name = pattern["name"].as_str().unwrap();
        let indexes = pattern["index_units_per_call"].as_object().unwrap();
        let index_sum = |kind: usize| -> f64 { indexes.values().map(|u| number(&u[kind])).sum() };
        let latency = &pattern["latency"];
        for (field, value) in [
            ("operations", number(&pattern["operations"])),
            ("ops_per_second", number(&pattern["ops_per_second"])),
            (
                "modelled_ops_per_second",
                number(&pattern["modelled_ops_per_second"]),
            ),
            ("p50_ms", number(&latency["p50_ms"])),
            ("p95_ms", number(&latency["p95_ms"])),
            ("p99_ms", number(&latency["p99_ms"])),
            ("max_ms", number(&latency["max_ms"])),
            (
                "rcu_per_call",
                number(&pattern["read_units_per_call"]) + index_sum(0),
            ),
            (
                "wcu_per_call",
                number(&pattern["write_units_per_call"]) + index_sum(1),
            ),
            (
                "table_rcu_per_call",
                number(&pattern["read_units_per_call"]),
            ),
            (
                "table_wcu_per_call",
                number(&pattern["write_units_per_call"]),
            ),
            ("items_per_call", number(&pattern["items_per_call"])),
            ("bytes_per_call", number(&pattern["item_bytes_per_call"])),
            (
                "monthly_cost_on_demand",
                number(&pattern["monthly_cost_on_demand"]),
            ),
            (
                "monthly_cost_provisioned",
                number(&pattern["monthly_cost_provisioned"]),
            ),
        ] {
            numbers.insert(format!("pattern:{name}:{field}"), value);
        }
        for (index, units) in indexes {
            numbers.insert(
                format!("pattern:{name}:index:{index}:rcu_per_call"),
                number(&units[0]),
            );
            numbers.insert(
                format!("pattern:{name}:index:{index}:wcu_per_call"),
                number(&units[1]),
            );
        }
    }
    let prices = &report["cost"]["prices"];
    let month = 730.0 * 3600.0 / 1e6;
    for resource in report["throughput"].as_array().unwrap() {
        let name = resource["resource"].as_str().unwrap();
        let need = [number(&resource["need"][0]), number(&resource["need"][1])];
        for (field, value) in [
            ("need_rcu", need[0]),
            ("need_wcu", need[1]),
            ("peak_rcu", number(&resource["peak"][0])),
            ("peak_wcu", number(&resource["peak"][1])),
            (
                "seconds_throttled_rcu",
                number(&resource["seconds_throttled"][0]),
            ),
            (
                "seconds_throttled_wcu",
                number(&resource["seconds_throttled"][1]),
            ),
        ] {
            numbers.insert(format!("throughput:{name}:{field}"), value);
        }
        // Each table's and GSI's monthly cost of its need, by DynamoDB's price formulas.
        let on_demand = need[0] * month * number(&prices["read_request_units_per_million"])
            + need[1] * month * number(&prices["write_request_units_per_million"]);
        let provisioned = (need[0] * number(&prices["read_capacity_unit_hour"])
            + need[1] * number(&prices["write_capacity_unit_hour"]))
            / number(&prices["provisioned_utilization"])
            * 730.0;
        numbers.insert(format!("cost:{name}:on_demand_monthly"), on_demand);
        numbers.insert(format!("cost:{name}:provisioned_monthly"), provisioned);
        for (kind, unit) in [(0, "rcu"), (1, "wcu")] {
            if let Some(seconds) = resource["burst_seconds"][kind].as_f64() {
                numbers.insert(format!("burst:{name}:{unit}"), seconds);
            }
        }
    }
    for partition in report["hot_partitions"].as_array().unwrap() {
        let (target, key) = (
            partition["target"].as_str().unwrap(),
            partition["key"].as_str().unwrap(),
        );
        numbers.insert(
            format!("partition:{target}:{key}:limit_share"),
            number(&partition["limit_share"]),
        );
        numbers.insert(
            format!("partition:{target}:{key}:seconds_over_limit"),
            number(&partition["seconds_over_limit"]),
        );
    }
    let plan = &report["plan"];
    texts.insert(
        "plan:first".to_string(),
        plan["first"].as_str().unwrap().to_string(),
    );
    for (i, limit) in plan["limits"]
        .as_array()
        .unwrap()
        .iter()
        .take(20)
        .enumerate()
    {
        numbers.insert(
            format!("plan:limit:{i}:multiple"),
            number(&limit["multiple"]),
        );
    }
    for provisioned in plan["provisioned"].as_array().unwrap() {
        let name = provisioned["resource"].as_str().unwrap();
        for field in ["declared_monthly", "needed_monthly"] {
            numbers.insert(
                format!("provisioned:{name}:{field}"),
                number(&provisioned[field]),
            );
        }
    }
    for table in report["tables"].as_array().unwrap() {
        let name = table["name"].as_str().unwrap();
        // DynamoDB bills 100 bytes more with every item and index entry.
        let billed =
            |entry: &Value| number(&entry["size_bytes"]) + 100.0 * number(&entry["item_count"]);
        let indexes = table["indexes"].as_array().unwrap();
        let table_billed = billed(table) + indexes.iter().map(billed).sum::<f64>();
        for (field, value) in [
            ("item_count", number(&table["item_count"])),
            ("size_bytes", number(&table["size_bytes"])),
            ("billed_bytes", table_billed),
            ("storage_monthly", storage_monthly(report, table_billed)),
        ] {
            numbers.insert(format!("table:{name}:{field}"), value);
        }
        for index in indexes {
            let index_name = index["name"].as_str().unwrap();
            for field in [
                "item_count",
                "size_bytes",
                "writes_per_base_write",
                "write_units_per_base_write_unit",
            ] {
                numbers.insert(
                    format!("index:{name}/{index_name}:{field}"),
                    number(&index[field]),
                );
            }
        }
    }
    for field in [
        "on_demand_monthly",
        "provisioned_monthly",
        "storage_monthly",
    ] {
        numbers.insert(format!("cost:{field}"), number(&report["cost"][field]));
    }
    (numbers, texts)
}

#[test]
fn the_html_report_shows_the_json_report_s_figures_in_a_browser() {
    let Some(chromium) = chromium() else {
        if std::env::var_os("CI").is_some() {
            panic!(
                "chromium is not installed, and CI checks the HTML report in it: \
                 apt-get update && apt-get install -y chromium"
            );
        }
        eprintln!(
            "skipped: no chromium at {CHROMIUM_PATHS:?} to check the HTML report in \
             (apt-get install -y chromium)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model.json");
    std::fs::write(&model, browser_model().to_string()).unwrap();
    let page = dir.path().join("report.html");
    let run = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(["bench", "--json", "--html"])
        .arg(&page)
        .arg("--model")
        .arg(&model)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: Value = serde_json::from_slice(&run.stdout).unwrap();

    // The model is built to show what the page must get right: a write's index units in
    // its total, a partition over its limit, burst capacity running out.
    let place = &report["patterns"][0];
    assert!(
        number(&place["index_units_per_call"]["Orders/ByStatus"][1]) > 0.0,
        "{place}"
    );
    assert!(
        report["hot_partitions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| number(&p["seconds_over_limit"]) > 0.0),
        "{}",
        report["hot_partitions"]
    );

    let (dom, stderr) = run_chromium(chromium, &page, &["--dump-dom".to_string()]);
    let errors = page_errors(&stderr);
    assert!(errors.is_empty(), "the page logged errors: {errors:#?}");
    assert!(dom.contains("<svg"), "{dom}");

    let shown = figures(&dom);
    let (numbers, texts) = expected_figures(&report);
    for (name, expected) in &numbers {
        let text = shown
            .get(name)
            .unwrap_or_else(|| panic!("the page shows no figure {name}"));
        let (value, rounding) =
            shown_number(text).unwrap_or_else(|| panic!("{name} shows {text:?}, not a number"));
        assert!(
            (value - expected).abs() <= rounding + 1e-9 * expected.abs(),
            "{name}: the page shows {text}, the report has {expected}"
        );
    }
    for (name, expected) in &texts {
        assert_eq!(shown.get(name), Some(expected), "{name}");
    }
    let unknown: Vec<&String> = shown
        .keys()
        .filter(|name| !numbers.contains_key(*name) && !texts.contains_key(*name))
        .collect();
    assert!(
        unknown.is_empty(),
        "figures the test does not check: {unknown:?}"
    );
    // The write's total is the table's units and the GSI's, not the table's alone.
    let total = shown_number(&shown["pattern:place:wcu_per_call"])
        .unwrap()
        .0;
    let table = shown_number(&shown["pattern:place:table_wcu_per_call"])
        .unwrap()
        .0;
    assert!(total > table, "{total} {table}");

    let screenshots = target_dir().join("bench-report-screenshots");
    std::fs::create_dir_all(&screenshots).unwrap();
    std::fs::copy(&page, screenshots.join("report.html")).unwrap();
    std::fs::write(screenshots.join("report.json"), &run.stdout).unwrap();
    for (width, file) in [(1200, "report-1200px.png"), (360, "report-360px.png")] {
        let path = screenshots.join(file);
        let _ = std::fs::remove_file(&path);
        let (_, stderr) = run_chromium(
            chromium,
            &page,
            &[
                format!("--screenshot={}", path.display()),
                format!("--window-size={width},2000"),
            ],
        );
        let errors = page_errors(&stderr);
        assert!(errors.is_empty(), "the page logged errors: {errors:#?}");
        let png = std::fs::read(&path).unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{}", path.display());
    }
    eprintln!("screenshots in {}", screenshots.display());
}
