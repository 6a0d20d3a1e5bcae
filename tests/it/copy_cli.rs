//! `shoal copy` between two running servers: the destination table made from the source's
//! schema, every item moved, throttling and dropped connections waited out, and an
//! interrupted copy (SIGKILL) resumed from its state file.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use shoal::client::target::{Client, Target};
use shoal::client::ConnectOptions;

use crate::sdk_server;
use sdk_server::Server;

fn client(server: &Server) -> Client {
    Target::endpoint(&server.endpoint, &ConnectOptions::default())
        .unwrap()
        .client()
        .unwrap()
}

fn call(client: &mut Client, operation: &str, body: Value) -> Value {
    let answer = client
        .call(operation, body.to_string().as_bytes())
        .unwrap_or_else(|e| panic!("{operation}: {}: {}", e.code, e.message));
    serde_json::from_slice(&answer).unwrap()
}

/// A table with an LSI and a GSI, holding `count` items of every attribute type.
fn fill_source(server: &Server, count: usize) {
    let mut client = client(server);
    call(
        &mut client,
        "CreateTable",
        json!({
            "TableName": "Orders",
            "AttributeDefinitions": [
                {"AttributeName": "pk", "AttributeType": "S"},
                {"AttributeName": "sk", "AttributeType": "N"},
                {"AttributeName": "when", "AttributeType": "S"},
                {"AttributeName": "customer", "AttributeType": "B"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                          {"AttributeName": "sk", "KeyType": "RANGE"}],
            "LocalSecondaryIndexes": [{"IndexName": "ByWhen",
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                              {"AttributeName": "when", "KeyType": "RANGE"}],
                "Projection": {"ProjectionType": "KEYS_ONLY"}}],
            "GlobalSecondaryIndexes": [{"IndexName": "ByCustomer",
                "KeySchema": [{"AttributeName": "customer", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"}}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    );
    for chunk in (0..count).collect::<Vec<_>>().chunks(25) {
        let puts: Vec<Value> = chunk
            .iter()
            .map(|n| json!({"PutRequest": {"Item": item(*n)}}))
            .collect();
        call(
            &mut client,
            "BatchWriteItem",
            json!({"RequestItems": {"Orders": puts}}),
        );
    }
}

fn item(n: usize) -> Value {
    json!({
        "pk": {"S": format!("customer-{}", n % 97)},
        "sk": {"N": format!("{}.5", n)},
        "when": {"S": format!("2026-11-{:02}", n % 28 + 1)},
        "customer": {"B": "AAEC"},
        "ok": {"BOOL": n.is_multiple_of(2)},
        "none": {"NULL": true},
        "tags": {"SS": ["a", format!("t{n}")]},
        "sizes": {"NS": ["1", format!("{}", n + 2)]},
        "blobs": {"BS": ["AA==", "AQ=="]},
        "lines": {"L": [{"S": "x"}, {"N": "-1e-3"}, {"M": {"deep": {"S": "y"}}}]},
        "address": {"M": {"city": {"S": "Lyon"}, "zip": {"N": "69000"}}},
        "note": {"S": "n".repeat(n % 700)},
    })
}

/// Every item of `table`, sets sorted, items sorted: two tables with the same items give
/// the same list whatever order they store sets and items in.
fn all_items(server: &Server, table: &str) -> Vec<Value> {
    let mut client = client(server);
    let mut items = Vec::new();
    let mut start: Option<Value> = None;
    loop {
        let mut request = json!({"TableName": table});
        if let Some(key) = start.take() {
            request["ExclusiveStartKey"] = key;
        }
        let mut page = call(&mut client, "Scan", request);
        if let Value::Array(found) = page["Items"].take() {
            items.extend(found.into_iter().map(normalized));
        }
        match page["LastEvaluatedKey"].take() {
            Value::Null => break,
            key => start = Some(key),
        }
    }
    items.sort_by_key(|item| item.to_string());
    items
}

fn normalized(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(name, value)| {
                    let value = match (name.as_str(), value) {
                        ("SS" | "NS" | "BS", Value::Array(mut members)) => {
                            members.sort_by_key(|member| member.to_string());
                            Value::Array(members)
                        }
                        (_, value) => normalized(value),
                    };
                    (name, value)
                })
                .collect(),
        ),
        Value::Array(values) => Value::Array(values.into_iter().map(normalized).collect()),
        other => other,
    }
}

fn shoal(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(args)
        .current_dir(dir)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run shoal")
}

#[test]
fn a_copy_creates_the_table_and_moves_every_item() {
    let (a_dir, b_dir, work) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let a = Server::start(a_dir.path(), &[]);
    let b = Server::start(b_dir.path(), &[]);
    fill_source(&a, 1500);
    let output = shoal(
        &[
            "copy",
            "--from",
            &a.endpoint,
            "--to",
            &b.endpoint,
            "--table",
            "Orders",
            "--to-table",
            "Copied",
            "--create",
            "--segments",
            "3",
        ],
        work.path(),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("copied 1500 items"), "{stdout}");
    assert_eq!(all_items(&a, "Orders"), all_items(&b, "Copied"));
    assert_eq!(all_items(&b, "Copied").len(), 1500);
    // The indexes came along and hold the items.
    let mut client = client(&b);
    let table = call(&mut client, "DescribeTable", json!({"TableName": "Copied"}));
    assert_eq!(
        table["Table"]["LocalSecondaryIndexes"][0]["IndexName"],
        "ByWhen"
    );
    assert_eq!(table["Table"]["ItemCount"], 1500);
    let by_customer = call(
        &mut client,
        "Query",
        json!({"TableName": "Copied", "IndexName": "ByCustomer", "Select": "COUNT",
               "KeyConditionExpression": "customer = :c",
               "ExpressionAttributeValues": {":c": {"B": "AAEC"}}}),
    );
    assert_eq!(by_customer["Count"], 1500);
    // A finished copy leaves no resume file behind.
    assert!(!work.path().join(".shoal-copy-Orders.json").exists());

    // A second copy with --create refuses the table that is there now.
    let again = shoal(
        &[
            "copy",
            "--from",
            &a.endpoint,
            "--to",
            &b.endpoint,
            "--table",
            "Orders",
            "--to-table",
            "Copied",
            "--create",
        ],
        work.path(),
    );
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already has a table Copied"));
}

#[test]
fn throttling_and_dropped_connections_are_waited_out() {
    let (a_dir, b_dir, work) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let faults = work.path().join("faults.json");
    std::fs::write(
        &faults,
        json!({"seed": 7, "rules": [
            {"operation": "BatchWriteItem", "table": "*",
             "error": {"code": "ProvisionedThroughputExceededException", "probability": 0.3}},
            {"operation": "BatchWriteItem", "table": "*", "drop_connection": {"probability": 0.05}}
        ]})
        .to_string(),
    )
    .unwrap();
    let a = Server::start(a_dir.path(), &[]);
    let b = Server::start(b_dir.path(), &["--faults", faults.to_str().unwrap()]);
    fill_source(&a, 400);
    let output = shoal(
        &[
            "copy",
            "--from",
            &a.endpoint,
            "--to",
            &b.endpoint,
            "--table",
            "Orders",
            "--create",
        ],
        work.path(),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let retries: u64 = stdout
        .trim()
        .split(", ")
        .find_map(|part| part.strip_suffix(" requests sent again)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no retry count in {stdout}"));
    assert!(retries > 0, "{stdout}");
    assert_eq!(all_items(&a, "Orders"), all_items(&b, "Orders"));
}

#[test]
fn an_interrupted_copy_goes_on_where_it_stopped() {
    let (a_dir, b_dir, work) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let a = Server::start(a_dir.path(), &[]);
    let b = Server::start(b_dir.path(), &[]);
    fill_source(&a, 3000);
    let state = work.path().join("copy-state.json");
    let args = [
        "copy",
        "--from",
        &a.endpoint,
        "--to",
        &b.endpoint,
        "--table",
        "Orders",
        "--create",
        "--segments",
        "4",
        "--state",
        state.to_str().unwrap(),
    ];
    // A slow first run (Scan pages of this table are about 250 items), killed once some
    // pages are recorded.
    let mut slow: Vec<&str> = args.to_vec();
    slow.extend(["--rate", "600"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(&slow)
        .current_dir(work.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let recorded = loop {
        let items = std::fs::read(&state)
            .ok()
            .and_then(|text| serde_json::from_slice::<Value>(&text).ok())
            .map(|state| {
                state["units"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|unit| unit["items"].as_u64().unwrap())
                    .sum::<u64>()
            })
            .unwrap_or(0);
        if items > 0 {
            break items;
        }
        assert!(Instant::now() < deadline, "the copy recorded nothing");
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(recorded < 3000, "the copy finished before it was killed");
    assert!(state.exists());

    // The same command again: it goes on (without --create's refusal of the table it made).
    let output = shoal(&args, work.path());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("by the interrupted run it resumed"),
        "{stdout}"
    );
    let copied_now: u64 = stdout
        .strip_prefix("copied ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(copied_now < 3000, "the second run started over: {stdout}");
    assert_eq!(all_items(&a, "Orders"), all_items(&b, "Orders"));
    assert!(!state.exists());

    // A resume file of another copy is refused rather than misapplied.
    std::fs::write(
        &state,
        json!({"format": 1, "from": "http://elsewhere", "to": "x", "table": "Orders",
               "to_table": "Orders", "export_id": null, "units": []})
        .to_string(),
    )
    .unwrap();
    let refused = shoal(&args, work.path());
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("records another copy"));
}

#[test]
fn a_copy_signs_its_requests_for_an_endpoint_that_verifies_them() {
    let (a_dir, b_dir, work) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let keys = work.path().join("keys");
    std::fs::write(&keys, "AKIDCOPYTEST copy/secret\n").unwrap();
    let a = Server::start(a_dir.path(), &[]);
    let b = Server::start(b_dir.path(), &["--auth", keys.to_str().unwrap()]);
    fill_source(&a, 60);
    let run = |secret: &str| {
        Command::new(env!("CARGO_BIN_EXE_shoal"))
            .args([
                "copy",
                "--from",
                &a.endpoint,
                "--to",
                &b.endpoint,
                "--table",
                "Orders",
                "--create",
                "--restart",
            ])
            .current_dir(work.path())
            .env("AWS_ACCESS_KEY_ID", "AKIDCOPYTEST")
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .env_remove("AWS_SESSION_TOKEN")
            .output()
            .unwrap()
    };
    let refused = run("not-the-secret");
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("InvalidSignatureException"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let output = run("copy/secret");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(all_items(&a, "Orders").len(), 60);
    let b_items = {
        // Reading B back needs the same signature.
        let connect = ConnectOptions {
            credentials: Some(shoal::client::Credentials {
                access_key: "AKIDCOPYTEST".into(),
                secret_key: "copy/secret".into(),
                session_token: None,
            }),
            ..ConnectOptions::default()
        };
        let mut client = Target::endpoint(&b.endpoint, &connect)
            .unwrap()
            .client()
            .unwrap();
        let answer = call(
            &mut client,
            "Scan",
            json!({"TableName": "Orders", "Select": "COUNT"}),
        );
        answer["Count"].as_u64().unwrap()
    };
    assert_eq!(b_items, 60);
}

/// The one export under `dir`'s `AWSDynamoDB/`.
fn export_dir_in(dir: &Path) -> std::path::PathBuf {
    let mut exports: Vec<_> = std::fs::read_dir(dir.join("AWSDynamoDB"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(exports.len(), 1, "{exports:?}");
    exports.remove(0)
}

#[test]
fn a_table_goes_to_a_directory_in_dynamodbs_export_layout_and_back() {
    let (a_dir, b_dir, work) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let a = Server::start(a_dir.path(), &[]);
    // B also imports from the bucket directory the copy writes to.
    let s3 = work.path().join("s3");
    let bucket = s3.join("bucket");
    let b = Server::start(b_dir.path(), &["--export-dir", s3.to_str().unwrap()]);
    fill_source(&a, 1200);
    let to_dir = shoal(
        &[
            "copy",
            "--from",
            &a.endpoint,
            "--to",
            bucket.to_str().unwrap(),
            "--table",
            "Orders",
            "--segments",
            "3",
        ],
        work.path(),
    );
    assert!(
        to_dir.status.success(),
        "{}",
        String::from_utf8_lossy(&to_dir.stderr)
    );
    let export = export_dir_in(&bucket);
    let summary: Value =
        serde_json::from_slice(&std::fs::read(export.join("manifest-summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["itemCount"], 1200);
    assert_eq!(summary["outputFormat"], "DYNAMODB_JSON");
    let manifest = std::fs::read_to_string(export.join("manifest-files.json")).unwrap();
    assert_eq!(manifest.lines().count(), 3, "one data file per segment");

    // Back from the directory into a new table made from the export's schema.
    let from_dir = shoal(
        &[
            "copy",
            "--from",
            bucket.to_str().unwrap(),
            "--to",
            &b.endpoint,
            "--table",
            "Orders",
            "--create",
        ],
        work.path(),
    );
    assert!(
        from_dir.status.success(),
        "{}",
        String::from_utf8_lossy(&from_dir.stderr)
    );
    assert_eq!(all_items(&a, "Orders"), all_items(&b, "Orders"));

    // DynamoDB's own ImportTable reads what the copy wrote.
    let mut client = client(&b);
    let export_id = export.file_name().unwrap().to_str().unwrap();
    let started = call(
        &mut client,
        "ImportTable",
        json!({
            "S3BucketSource": {"S3Bucket": "bucket",
                               "S3KeyPrefix": format!("AWSDynamoDB/{export_id}/data/")},
            "InputFormat": "DYNAMODB_JSON",
            "InputCompressionType": "GZIP",
            "TableCreationParameters": {
                "TableName": "Imported",
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                         {"AttributeName": "sk", "AttributeType": "N"}],
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                              {"AttributeName": "sk", "KeyType": "RANGE"}],
                "BillingMode": "PAY_PER_REQUEST"}
        }),
    );
    let arn = started["ImportTableDescription"]["ImportArn"].clone();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let described = call(&mut client, "DescribeImport", json!({"ImportArn": arn}));
        let status = described["ImportTableDescription"]["ImportStatus"].clone();
        if status == "COMPLETED" {
            assert_eq!(
                described["ImportTableDescription"]["ImportedItemCount"],
                1200
            );
            break;
        }
        assert_eq!(status, "IN_PROGRESS", "{described}");
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(all_items(&b, "Imported"), all_items(&a, "Orders"));
}

#[test]
fn an_interrupted_copy_into_a_directory_goes_on_in_the_same_export() {
    let (a_dir, work) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = Server::start(a_dir.path(), &[]);
    fill_source(&a, 3000);
    let bucket = work.path().join("out");
    let args = [
        "copy",
        "--from",
        &a.endpoint,
        "--to",
        bucket.to_str().unwrap(),
        "--table",
        "Orders",
        "--segments",
        "2",
    ];
    let mut slow: Vec<&str> = args.to_vec();
    slow.extend(["--rate", "600"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_shoal"))
        .args(&slow)
        .current_dir(work.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let state = work.path().join(".shoal-copy-Orders.json");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&state).is_ok_and(|text| text.contains("\"bytes\"")) {
        assert!(Instant::now() < deadline, "the copy recorded no page");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let export = export_dir_in(&bucket);
    assert!(!export.join("manifest-summary.json").exists());

    let output = shoal(&args, work.path());
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The same export, now complete: every item once, checksums over the whole files.
    assert_eq!(export_dir_in(&bucket), export);
    let mut lines = 0;
    for entry in std::fs::read_to_string(export.join("manifest-files.json"))
        .unwrap()
        .lines()
    {
        let entry: Value = serde_json::from_str(entry).unwrap();
        let name = entry["dataFileS3Key"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap();
        let bytes = std::fs::read(export.join("data").join(name)).unwrap();
        use std::io::Read;
        let mut text = String::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(
            text.lines().count() as u64,
            entry["itemCount"].as_u64().unwrap()
        );
        lines += text.lines().count();
        let md5 = shoal::tables::transfer::write::md5_base64(&bytes);
        assert_eq!(entry["md5Checksum"], md5);
    }
    assert_eq!(lines, 3000);
}

#[test]
fn export_and_import_straight_on_data_directories() {
    let (a_dir, b_dir, work) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let a = Server::start(a_dir.path(), &[]);
    fill_source(&a, 900);
    let source_items = all_items(&a, "Orders");
    a.stop();

    let out = work.path().join("out");
    let export = shoal(
        &[
            "export",
            "--data-dir",
            a_dir.path().to_str().unwrap(),
            "--table",
            "Orders",
            "--to",
            out.to_str().unwrap(),
        ],
        work.path(),
    );
    let stdout = String::from_utf8_lossy(&export.stdout);
    assert!(
        export.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&export.stderr)
    );
    assert!(
        stdout.starts_with("exported 900 items of Orders"),
        "{stdout}"
    );
    // Its stderr is a pipe here, as in a CI log: progress comes as plain lines, no bar.
    let stderr = String::from_utf8_lossy(&export.stderr);
    let line = stderr
        .lines()
        .find(|line| line.starts_with("exporting ["))
        .unwrap_or_else(|| panic!("no progress line: {stderr}"));
    assert!(line.contains(" items ("), "{line}");
    assert!(!line.contains('█') && !line.contains('░'), "{line}");

    let import = shoal(
        &[
            "import",
            "--data-dir",
            b_dir.path().to_str().unwrap(),
            "--from",
            out.to_str().unwrap(),
            "--table",
            "Copy",
        ],
        work.path(),
    );
    let stdout = String::from_utf8_lossy(&import.stdout);
    assert!(
        import.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&import.stderr)
    );
    assert!(
        stdout.starts_with("imported 900 items into Copy"),
        "{stdout}"
    );
    let stderr = String::from_utf8_lossy(&import.stderr);
    assert!(
        stderr.lines().any(|line| line.starts_with("importing [")),
        "no progress line: {stderr}"
    );
    let check = shoal(
        &["check", "--data-dir", b_dir.path().to_str().unwrap()],
        work.path(),
    );
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let b = Server::start(b_dir.path(), &[]);
    assert_eq!(all_items(&b, "Copy"), source_items);
    let mut client = client(&b);
    let table = call(&mut client, "DescribeTable", json!({"TableName": "Copy"}));
    assert_eq!(
        table["Table"]["LocalSecondaryIndexes"][0]["IndexName"],
        "ByWhen"
    );
    assert_eq!(
        table["Table"]["GlobalSecondaryIndexes"][0]["IndexName"],
        "ByCustomer"
    );

    // A bad line is reported with its place, and the import says it failed.
    let broken = work.path().join("broken");
    let copied = std::process::Command::new("cp")
        .args(["-r", out.to_str().unwrap(), broken.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(copied.success());
    let data = export_dir_in(&broken).join("data");
    let first = std::fs::read_dir(&data)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut gzip = flate2::write::GzEncoder::new(
        std::fs::OpenOptions::new()
            .append(true)
            .open(&first)
            .unwrap(),
        flate2::Compression::fast(),
    );
    use std::io::Write;
    gzip.write_all(b"{\"Item\": {\"pk\": {\"S\": \"no sort key\"}}}\n")
        .unwrap();
    gzip.finish().unwrap();
    let c_dir = tempfile::tempdir().unwrap();
    let bad = shoal(
        &[
            "import",
            "--data-dir",
            c_dir.path().to_str().unwrap(),
            "--from",
            broken.to_str().unwrap(),
            "--table",
            "Copy",
        ],
        work.path(),
    );
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success());
    assert!(stderr.contains("bad line: "), "{stderr}");
    assert!(
        stderr.contains("Some of the items failed validation checks and were not imported."),
        "{stderr}"
    );
}

/// A table whose GSI is keyed on several attributes (SPEC-3 §1) is copied with that key:
/// the destination's DescribeTable names every component in order, and a Query on the
/// index with every HASH component and a RANGE prefix finds the same items.
#[test]
fn a_copy_keeps_a_multi_attribute_gsi_key() {
    let (a_dir, b_dir, work) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let a = Server::start(a_dir.path(), &[]);
    let b = Server::start(b_dir.path(), &[]);
    let mut source = client(&a);
    call(
        &mut source,
        "CreateTable",
        json!({
            "TableName": "Events",
            "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": [
                {"AttributeName": "id", "AttributeType": "S"},
                {"AttributeName": "tenant", "AttributeType": "S"},
                {"AttributeName": "kind", "AttributeType": "S"},
                {"AttributeName": "day", "AttributeType": "N"},
                {"AttributeName": "seq", "AttributeType": "N"}
            ],
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "GlobalSecondaryIndexes": [{
                "IndexName": "ByTenantKind",
                "KeySchema": [
                    {"AttributeName": "tenant", "KeyType": "HASH"},
                    {"AttributeName": "kind", "KeyType": "HASH"},
                    {"AttributeName": "day", "KeyType": "RANGE"},
                    {"AttributeName": "seq", "KeyType": "RANGE"}
                ],
                "Projection": {"ProjectionType": "ALL"}
            }]
        }),
    );
    for n in 0..60 {
        let mut item = json!({
            "id": {"S": format!("e{n}")},
            "tenant": {"S": format!("t{}", n % 2)},
            "kind": {"S": if n % 3 == 0 { "click" } else { "view" }},
            "day": {"N": (n % 5).to_string()},
            "seq": {"N": n.to_string()}
        });
        if n % 10 == 0 {
            // Sparse: without one component the item is in the table, not in the index.
            item.as_object_mut().unwrap().remove("seq");
        }
        call(
            &mut source,
            "PutItem",
            json!({"TableName": "Events", "Item": item}),
        );
    }
    let output = shoal(
        &[
            "copy",
            "--from",
            &a.endpoint,
            "--to",
            &b.endpoint,
            "--table",
            "Events",
            "--create",
        ],
        work.path(),
    );
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(all_items(&a, "Events"), all_items(&b, "Events"));
    let mut destination = client(&b);
    let described = call(
        &mut destination,
        "DescribeTable",
        json!({"TableName": "Events"}),
    );
    let key: Vec<(String, String)> = described["Table"]["GlobalSecondaryIndexes"][0]["KeySchema"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["AttributeName"].as_str().unwrap().to_owned(),
                e["KeyType"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        key,
        [
            ("tenant".to_owned(), "HASH".to_owned()),
            ("kind".to_owned(), "HASH".to_owned()),
            ("day".to_owned(), "RANGE".to_owned()),
            ("seq".to_owned(), "RANGE".to_owned())
        ]
    );
    let query = json!({
        "TableName": "Events", "IndexName": "ByTenantKind",
        "KeyConditionExpression": "tenant = :t AND kind = :k AND #day = :d",
        "ExpressionAttributeNames": {"#day": "day"},
        "ExpressionAttributeValues": {":t": {"S": "t1"}, ":k": {"S": "view"}, ":d": {"N": "3"}}
    });
    let before = call(&mut source, "Query", query.clone());
    let after = call(&mut destination, "Query", query);
    assert_eq!(before["Items"], after["Items"]);
    assert!(after["Count"].as_u64().unwrap() > 0);
}
