//! ImportTable from the local directory standing for S3: formats, compressions, bad lines,
//! duplicates, the request's checks, idempotency, records after a restart.

use crate::import_support;
use import_support::*;
use serde_json::{json, Value};
use shoal_model::ErrorCode;
use shoal_tables::api::import::{DescribeImportInput, ListImportsInput};
use shoal_tables::Database;
use shoal_tables::TransferOptions;

/// An item of every attribute type; `pad` bytes of text in `big`.
fn every_type_item(n: u64, pad: usize) -> Value {
    json!({
        "pk": {"S": format!("p{}", n % 7)},
        "sk": {"N": n.to_string()},
        "g": {"S": format!("g{}", n % 3)},
        "s": {"S": "text ✓ \"quoted\""},
        "n": {"N": "-12.3400"},
        "b": {"B": "AAEC/w=="},
        "t": {"BOOL": n.is_multiple_of(2)},
        "z": {"NULL": true},
        "m": {"M": {"inner": {"L": [{"N": "1"}, {"S": "x"}, {"M": {}}]}}},
        "l": {"L": [{"SS": ["a", "b"]}, {"NULL": true}]},
        "ss": {"SS": ["x", "y", "z"]},
        "ns": {"NS": ["1", "2.5", "-3"]},
        "bs": {"BS": ["AQ==", "Ag=="]},
        "big": {"S": "x".repeat(pad)}
    })
}

#[test]
fn a_gzip_export_round_trips_item_for_item_into_a_table_with_a_gsi() {
    let dir = tempfile::tempdir().unwrap();
    let mut items: Vec<Value> = (0..300).map(|n| every_type_item(n, 10)).collect();
    // Items near the 400 KB limit.
    items.extend((300..304).map(|n| every_type_item(n, 400_000)));
    let (first, second) = items.split_at(150);
    put_object(
        dir.path(),
        "bucket",
        "AWSDynamoDB/x/data/a.json.gz",
        &gzip(&export_lines(first)),
    );
    // Two gzip members in one object, as a concatenation of exports would be.
    let mut multi = gzip(&export_lines(&second[..10]));
    multi.extend(gzip(&export_lines(&second[10..])));
    put_object(dir.path(), "bucket", "AWSDynamoDB/x/data/b.json.gz", &multi);
    let db = database(dir.path());

    let description = import(
        &db,
        json_import("Imported", "bucket", "AWSDynamoDB/", "GZIP"),
    );
    assert_eq!(description.import_status, "COMPLETED", "{description:?}");
    assert_eq!(description.processed_item_count, items.len() as u64);
    assert_eq!(description.imported_item_count, items.len() as u64);
    assert_eq!(description.error_count, 0);
    assert!(description.processed_size_bytes > 0);
    assert!(description
        .import_arn
        .starts_with(&format!("{}/import/", description.table_arn)));

    assert_eq!(by_key(&scan_all(&db, "Imported")), by_key(&items));
    assert_sound(&db);
    let table = db
        .execute("DescribeTable", json!({"TableName": "Imported"}))
        .unwrap();
    assert_eq!(table["Table"]["TableStatus"], "ACTIVE");
    assert_eq!(table["Table"]["ItemCount"], items.len());
    assert_eq!(table["Table"]["TableId"], description.table_id);
    assert_eq!(
        table["Table"]["GlobalSecondaryIndexes"][0]["ItemCount"],
        items.len()
    );
    let g0 = db
        .execute(
            "Query",
            json!({"TableName": "Imported", "IndexName": "ByG",
                   "KeyConditionExpression": "g = :g", "ExpressionAttributeValues": {":g": {"S": "g0"}},
                   "Select": "COUNT"}),
        )
        .unwrap();
    assert_eq!(
        g0["Count"],
        items.iter().filter(|i| i["g"]["S"] == "g0").count()
    );
}

#[test]
fn of_duplicate_keys_the_last_line_wins_and_the_gsi_keeps_no_stale_entry() {
    let dir = tempfile::tempdir().unwrap();
    let item = |g: &str, v: &str| json!({"pk": {"S": "a"}, "sk": {"N": "1"}, "g": {"S": g}, "v": {"S": v}});
    let mut lines = vec![item("old", "1"), item("mid", "2")];
    lines.extend((0..2000).map(|n| json!({"pk": {"S": "filler"}, "sk": {"N": n.to_string()}})));
    // The same key again in a later chunk, and twice in the same chunk.
    lines.push(item("later", "3"));
    lines.push(item("last", "4"));
    put_object(dir.path(), "b1", "one.json", &export_lines(&lines[..1]));
    put_object(dir.path(), "b1", "two.json", &export_lines(&lines[1..]));
    let db = database(dir.path());

    let description = import(&db, json_import("Dups", "b1", "", "NONE"));
    assert_eq!(description.import_status, "COMPLETED", "{description:?}");
    assert_eq!(description.processed_item_count, lines.len() as u64);
    let stored = db
        .execute(
            "GetItem",
            json!({"TableName": "Dups", "Key": {"pk": {"S": "a"}, "sk": {"N": "1"}}}),
        )
        .unwrap();
    assert_eq!(stored["Item"]["v"]["S"], "4");
    for stale in ["old", "mid", "later"] {
        let found = db
            .execute(
                "Query",
                json!({"TableName": "Dups", "IndexName": "ByG", "KeyConditionExpression": "g = :g",
                       "ExpressionAttributeValues": {":g": {"S": stale}}}),
            )
            .unwrap();
        assert_eq!(found["Count"], 0, "GSI entry {stale} left behind");
    }
    let table = db
        .execute("DescribeTable", json!({"TableName": "Dups"}))
        .unwrap();
    assert_eq!(table["Table"]["ItemCount"], 2001);
    assert_eq!(table["Table"]["GlobalSecondaryIndexes"][0]["ItemCount"], 1);
    assert_sound(&db);
}

#[test]
fn each_bad_line_is_counted_and_reported_and_the_good_lines_are_imported() {
    let dir = tempfile::tempdir().unwrap();
    let good = |n: u64| json!({"Item": {"pk": {"S": "k"}, "sk": {"N": n.to_string()}}}).to_string();
    let lines = [
        good(1),                                                           // 1
        "{not json".to_string(),                                           // 2
        json!({"Item": {"sk": {"N": "1"}}}).to_string(),                   // 3 missing key
        json!({"Item": {"pk": {"N": "1"}, "sk": {"N": "1"}}}).to_string(), // 4 wrong key type
        json!({"Item": {"pk": {"S": "k"}, "sk": {"N": "2"}, "x": {"S": "y".repeat(410_000)}}})
            .to_string(), // 5 too big
        json!({"Item": {"pk": {"S": ""}, "sk": {"N": "1"}}}).to_string(),  // 6 empty key
        json!({"Item": {"pk": {"S": "k"}, "sk": {"N": "1e999"}}}).to_string(), // 7 bad number
        String::new(),                                                     // 8 blank: skipped
        json!({"Item": {"pk": {"S": "k"}, "sk": {"N": "3"}, "e": {"SS": []}}}).to_string(), // 9
        good(4),                                                           // 10
    ];
    put_object(
        dir.path(),
        "bad",
        "data/file.json",
        lines.join("\n").as_bytes(),
    );
    let db = database(dir.path());

    let description = import(&db, json_import("Partial", "bad", "data/", "NONE"));
    assert_eq!(description.import_status, "FAILED");
    assert_eq!(
        description.failure_code.as_deref(),
        Some("ItemValidationError")
    );
    let message = description.failure_message.clone().unwrap();
    assert!(
        message.starts_with("Some of the items failed validation checks and were not imported."),
        "{message}"
    );
    assert!(message.contains("data/file.json line 2"), "{message}");
    assert_eq!(description.error_count, 7);
    assert_eq!(description.processed_item_count, 9);
    assert_eq!(description.imported_item_count, 2);

    let errors = db.import_errors(&description.import_arn).unwrap();
    let lines_reported: Vec<u64> = errors.iter().map(|e| e.line).collect();
    assert_eq!(lines_reported, vec![2, 3, 4, 5, 6, 7, 9]);
    assert!(errors.iter().all(|e| e.file == "data/file.json"));
    assert!(
        errors[1].reason.contains("Missing the key pk"),
        "{:?}",
        errors[1]
    );
    assert!(
        errors[2].reason.contains("Type mismatch"),
        "{:?}",
        errors[2]
    );
    assert!(errors[3].reason.contains("Item size"), "{:?}", errors[3]);
    assert!(errors[4].reason.contains("empty"), "{:?}", errors[4]);
    // The table stays, with the valid items, as DynamoDB's does.
    assert_eq!(scan_all(&db, "Partial").len(), 2);
    assert_sound(&db);
}

#[test]
fn csv_with_quotes_delimiters_and_a_header_list_is_typed_by_the_key_definitions() {
    let dir = tempfile::tempdir().unwrap();
    // A header line, quoted fields holding the delimiter, a quote and a newline, an empty
    // non-key cell, a record with too many fields and one with a non-numeric key.
    let with_header = "pk;sk;g;note\n\
                       a;1;x;\"semi; colon\"\n\
                       b;2;;\"say \"\"hi\"\"\nsecond line\"\n\
                       c;3;y;z;extra\n\
                       d;four;y;z\n";
    put_object(dir.path(), "csv", "h/one.csv", with_header.as_bytes());
    let db = database(dir.path());
    let mut request = json!({
        "S3BucketSource": {"S3Bucket": "csv", "S3KeyPrefix": "h/"},
        "InputFormat": "CSV",
        "InputFormatOptions": {"Csv": {"Delimiter": ";"}},
        "TableCreationParameters": table_parameters("Csv")
    });
    let description = import(&db, import_support::request(request.clone()));
    assert_eq!(description.import_status, "FAILED");
    assert_eq!(description.imported_item_count, 2);
    assert_eq!(description.error_count, 2);
    let errors = db.import_errors(&description.import_arn).unwrap();
    assert_eq!(
        errors.iter().map(|e| e.line).collect::<Vec<_>>(),
        vec![5, 6]
    );
    let items = by_key(&scan_all(&db, "Csv"));
    let a = items
        .values()
        .find(|i| i["pk"] == shoal_model::AttributeValue::S("a".into()))
        .unwrap();
    assert_eq!(
        a["note"],
        shoal_model::AttributeValue::S("semi; colon".into())
    );
    assert!(matches!(a["sk"], shoal_model::AttributeValue::N(_)));
    let b = items
        .values()
        .find(|i| i["pk"] == shoal_model::AttributeValue::S("b".into()))
        .unwrap();
    assert_eq!(
        b["note"],
        shoal_model::AttributeValue::S("say \"hi\"\nsecond line".into())
    );
    assert!(!b.contains_key("g"), "an empty non-key cell is left out");

    // HeaderList: every line is data; tab as the delimiter.
    put_object(dir.path(), "csv", "t/one.tsv", b"e\t5\tq\n\"f\"\t6\tr\n");
    request["S3BucketSource"]["S3KeyPrefix"] = json!("t/");
    request["InputFormatOptions"] =
        json!({"Csv": {"Delimiter": "\t", "HeaderList": ["pk", "sk", "other"]}});
    request["TableCreationParameters"] = table_parameters("Tsv");
    let description = import(&db, import_support::request(request));
    assert_eq!(description.import_status, "COMPLETED", "{description:?}");
    assert_eq!(description.imported_item_count, 2);
    let items = scan_all(&db, "Tsv");
    assert!(items
        .iter()
        .any(|i| i["pk"]["S"] == "f" && i["other"]["S"] == "r"));
    assert_sound(&db);
}

#[test]
fn zstd_and_uncompressed_objects_and_a_key_prefix_selecting_some_files() {
    let dir = tempfile::tempdir().unwrap();
    let item = |n: u64| json!({"pk": {"S": "z"}, "sk": {"N": n.to_string()}});
    // Extensions mean nothing: the request's compression decides.
    put_object(
        dir.path(),
        "zb",
        "run/part-1.gz",
        &zstd::encode_all(&export_lines(&[item(1), item(2)])[..], 3).unwrap(),
    );
    put_object(
        dir.path(),
        "zb",
        "run/part-10",
        &zstd::encode_all(&export_lines(&[item(10)])[..], 3).unwrap(),
    );
    put_object(
        dir.path(),
        "zb",
        "run/part-2",
        &zstd::encode_all(&export_lines(&[item(20)])[..], 3).unwrap(),
    );
    let db = database(dir.path());
    let description = import(&db, json_import("Zstd", "zb", "run/part-1", "ZSTD"));
    assert_eq!(description.import_status, "COMPLETED", "{description:?}");
    assert_eq!(
        description.imported_item_count, 3,
        "part-1 and part-10, not part-2"
    );

    put_object(dir.path(), "plain", "x.json.gz", &export_lines(&[item(5)]));
    let description = import(&db, json_import("Plain", "plain", "", "NONE"));
    assert_eq!(description.import_status, "COMPLETED", "{description:?}");
    assert_eq!(scan_all(&db, "Plain").len(), 1);
}

#[test]
fn a_missing_bucket_fails_the_import_and_creates_no_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = database(dir.path());
    let description = import(&db, json_import("Nowhere", "no-such-bucket", "", "GZIP"));
    assert_eq!(description.import_status, "FAILED");
    assert_eq!(description.failure_code.as_deref(), Some("S3NoSuchBucket"));
    assert!(description
        .failure_message
        .unwrap()
        .contains("bucket does not exist"));
    assert!(db.table("Nowhere").is_err());
    assert_sound(&db);
}

#[test]
fn requests_the_import_cannot_serve_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    put_object(dir.path(), "bkt", "k", b"");
    let db = database(dir.path());
    let refused = |body: Value| db.import_table(request(body)).unwrap_err();

    let mut ion = serde_json::to_value(json_import("Tab", "bkt", "", "NONE")).unwrap();
    ion["InputFormat"] = json!("ION");
    let error = refused(ion);
    assert_eq!(error.code, ErrorCode::ValidationException);
    assert!(error.message.contains("ION"), "{}", error.message);

    let mut options = serde_json::to_value(json_import("Tab", "bkt", "", "NONE")).unwrap();
    options["InputFormatOptions"] = json!({"Csv": {"Delimiter": ","}});
    assert_eq!(
        refused(options).message,
        "Invalid Request: Unsupported InputFormatOptions for the given input format: DYNAMODB_JSON."
    );

    let mut format = serde_json::to_value(json_import("Tab", "bkt", "", "NONE")).unwrap();
    format["InputFormat"] = json!("XML");
    assert!(refused(format).message.contains("inputFormat"));
    let mut compression = serde_json::to_value(json_import("Tab", "bkt", "", "NONE")).unwrap();
    compression["InputCompressionType"] = json!("LZ4");
    assert!(refused(compression)
        .message
        .contains("inputCompressionType"));
    let mut delimiter = serde_json::to_value(json_import("Tab", "bkt", "", "NONE")).unwrap();
    delimiter["InputFormat"] = json!("CSV");
    delimiter["InputFormatOptions"] = json!({"Csv": {"Delimiter": "#"}});
    assert!(refused(delimiter).message.contains("delimiter"));
    let mut traversal = serde_json::to_value(json_import("Tab", "bkt", "", "NONE")).unwrap();
    traversal["S3BucketSource"]["S3Bucket"] = json!("../etc");
    assert!(refused(traversal).message.contains("s3Bucket"));
    // TableCreationParameters are checked as CreateTable checks them.
    let mut schema = serde_json::to_value(json_import("Tab", "bkt", "", "NONE")).unwrap();
    schema["TableCreationParameters"]["KeySchema"] =
        json!([{"AttributeName": "nope", "KeyType": "HASH"}]);
    assert_eq!(refused(schema).code, ErrorCode::ValidationException);

    db.execute(
        "CreateTable",
        json!({
            "TableName": "Exists",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    let exists = refused(serde_json::to_value(json_import("Exists", "bkt", "", "NONE")).unwrap());
    assert_eq!(exists.code, ErrorCode::ResourceInUseException);

    // Without a directory standing for S3, the refusal names the flag.
    let no_dir = Database::in_memory().unwrap();
    let error = no_dir
        .import_table(json_import("Tab", "bkt", "", "NONE"))
        .unwrap_err();
    assert_eq!(error.code, ErrorCode::ValidationException);
    assert!(error.message.contains("--export-dir"), "{}", error.message);
}

#[test]
fn a_client_token_answers_the_same_import_and_refuses_a_changed_request() {
    let dir = tempfile::tempdir().unwrap();
    put_object(
        dir.path(),
        "bkt",
        "k",
        &export_lines(&[json!({"pk": {"S": "a"}, "sk": {"N": "1"}})]),
    );
    let db = database(dir.path());
    let mut body = serde_json::to_value(json_import("Token", "bkt", "", "NONE")).unwrap();
    body["ClientToken"] = json!("token-1");
    let first = import(&db, request(body.clone()));
    assert_eq!(first.client_token, "token-1");
    let again = import(&db, request(body.clone()));
    assert_eq!(again.import_arn, first.import_arn);
    body["TableCreationParameters"] = table_parameters("Other");
    let conflict = db.import_table(request(body)).unwrap_err();
    assert_eq!(conflict.code, ErrorCode::ImportConflictException);
    // Without a token, one is made up and returned; two requests are two imports.
    let a = import(&db, json_import("NoToken1", "bkt", "", "NONE"));
    assert!(!a.client_token.is_empty());
}

#[test]
fn imports_run_in_the_background_and_are_described_and_listed_after_a_restart() {
    let exports = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let items: Vec<Value> = (0..5000)
        .map(|n| json!({"pk": {"S": "p"}, "sk": {"N": n.to_string()}}))
        .collect();
    put_object(
        exports.path(),
        "bkt",
        "data.gz",
        &gzip(&export_lines(&items)),
    );
    put_object(exports.path(), "bkt", "bad.gz", &gzip(b"{\"Item\": 3}\n"));
    let options = shoal_tables::Options {
        transfer: TransferOptions {
            export_dir: Some(exports.path().to_path_buf()),
        },
        ..shoal_tables::Options::default()
    };
    let arn = {
        let db = Database::open(data.path(), options.clone()).unwrap();
        let started = db
            .execute(
                "ImportTable",
                json!({"S3BucketSource": {"S3Bucket": "bkt"}, "InputFormat": "DYNAMODB_JSON",
                       "InputCompressionType": "GZIP", "TableCreationParameters": table_parameters("Bgr")}),
            )
            .unwrap();
        let description = &started["ImportTableDescription"];
        assert_eq!(description["ImportStatus"], "IN_PROGRESS");
        let arn = description["ImportArn"].as_str().unwrap().to_string();
        let status = loop {
            let now = db
                .execute("DescribeImport", json!({"ImportArn": arn}))
                .unwrap();
            let status = now["ImportTableDescription"]["ImportStatus"]
                .as_str()
                .unwrap()
                .to_string();
            if status != "IN_PROGRESS" {
                break now;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert_eq!(status["ImportTableDescription"]["ImportStatus"], "FAILED");
        assert_eq!(status["ImportTableDescription"]["ImportedItemCount"], 5000);
        // The bad line is in the error log file.
        let log = data
            .path()
            .join("import-errors")
            .join(format!("{}.jsonl", arn.rsplit('/').next().unwrap()));
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(text.contains("\"file\":\"bad.gz\""), "{text}");
        assert!(status["ImportTableDescription"]["FailureMessage"]
            .as_str()
            .unwrap()
            .contains(&log.display().to_string()));
        arn
    };
    let db = Database::open(data.path(), options).unwrap();
    let described = db
        .describe_import(DescribeImportInput {
            import_arn: Some(arn.clone()),
        })
        .unwrap();
    assert_eq!(described.import_table_description.import_status, "FAILED");
    assert_eq!(described.import_table_description.imported_item_count, 5000);
    assert_eq!(scan_all(&db, "Bgr").len(), 5000);
    let listed = db
        .list_imports(ListImportsInput {
            table_arn: Some(described.import_table_description.table_arn.clone()),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(listed.import_summary_list.len(), 1);
    assert_eq!(listed.import_summary_list[0].import_arn, arn);
    let missing = db
        .describe_import(DescribeImportInput {
            import_arn: Some(format!(
                "{}/import/01-deadbeef",
                described.import_table_description.table_arn
            )),
        })
        .unwrap_err();
    assert_eq!(missing.code, ErrorCode::ImportNotFoundException);
    assert_sound(&db);
}

#[test]
fn list_imports_pages() {
    let dir = tempfile::tempdir().unwrap();
    put_object(dir.path(), "bkt", "k", b"");
    let db = database(dir.path());
    for n in 0..3 {
        import(&db, json_import(&format!("Lst{n}"), "bkt", "", "NONE"));
    }
    let first = db
        .list_imports(ListImportsInput {
            page_size: Some(2),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(first.import_summary_list.len(), 2);
    let rest = db
        .list_imports(ListImportsInput {
            page_size: Some(2),
            next_token: first.next_token.clone(),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(rest.import_summary_list.len(), 1);
    assert!(rest.next_token.is_none());
    assert!(db
        .list_imports(ListImportsInput {
            page_size: Some(26),
            ..Default::default()
        })
        .is_err());
}

#[test]
fn a_database_closed_during_an_import_ends_it_failed_with_no_table() {
    let exports = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let items: Vec<Value> = (0..200_000)
        .map(|n| json!({"pk": {"S": format!("p{n}")}, "sk": {"N": "1"}}))
        .collect();
    put_object(
        exports.path(),
        "bkt",
        "data.gz",
        &gzip(&export_lines(&items)),
    );
    let options = shoal_tables::Options {
        transfer: TransferOptions {
            export_dir: Some(exports.path().to_path_buf()),
        },
        ..shoal_tables::Options::default()
    };
    let arn = {
        let db = Database::open(data.path(), options.clone()).unwrap();
        let started = db
            .import_table(json_import("Closed", "bkt", "", "GZIP"))
            .unwrap();
        started.import_table_description.import_arn
        // Dropped while the import runs: it stops.
    };
    let db = Database::open(data.path(), options).unwrap();
    let description = db
        .describe_import(DescribeImportInput {
            import_arn: Some(arn),
        })
        .unwrap()
        .import_table_description;
    if description.import_status == "COMPLETED" {
        // The machine was fast enough to finish first: then the table is whole.
        assert_eq!(scan_all(&db, "Closed").len(), items.len());
    } else {
        assert_eq!(description.import_status, "FAILED");
        let message = description.failure_message.unwrap();
        assert!(message.contains("interrupted"), "{message}");
        assert!(db.table("Closed").is_err());
    }
    assert_sound(&db);
    assert_eq!(
        db.lsm().version().trees.len(),
        1,
        "only the statistics tree is left"
    );
}

#[test]
fn a_fifth_running_import_and_a_second_import_of_a_table_are_refused() {
    let exports = tempfile::tempdir().unwrap();
    let items: Vec<Value> = (0..100_000)
        .map(|n| json!({"pk": {"S": format!("p{n}")}, "sk": {"N": "1"}}))
        .collect();
    put_object(
        exports.path(),
        "bkt",
        "data.gz",
        &gzip(&export_lines(&items)),
    );
    let db = database(exports.path());
    for n in 0..4 {
        db.import_table(json_import(&format!("Running{n}"), "bkt", "", "GZIP"))
            .unwrap();
    }
    // Each of the four reads 100,000 items: none has ended yet.
    let same_table = db
        .import_table(json_import("Running0", "bkt", "", "GZIP"))
        .unwrap_err();
    assert_eq!(same_table.code, ErrorCode::ResourceInUseException);
    let fifth = db
        .import_table(json_import("Fifth", "bkt", "", "GZIP"))
        .unwrap_err();
    assert_eq!(fifth.code, ErrorCode::LimitExceededException);
    assert!(fifth.message.contains("4"), "{}", fifth.message);
}
