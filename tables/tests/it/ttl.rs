//! Time to Live (SPEC-2 §2): the API's rules and texts, expiry through the write path
//! (indexes, collections, streams), items written before enabling, and the sweep's
//! condition on the value it saw. Time is a clock the test moves.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use shoal_tables::{Clock, Database, Options, StreamStart, TimeToLiveOptions};

const NOW_SECONDS: u64 = 2_000_000_000;

struct Fixture {
    db: Database,
    now_millis: Arc<AtomicU64>,
}

impl Fixture {
    fn new() -> Fixture {
        let now_millis = Arc::new(AtomicU64::new(NOW_SECONDS * 1000));
        let clock = {
            let now = Arc::clone(&now_millis);
            Clock::from_fn(move || now.load(Ordering::SeqCst))
        };
        let db = Database::open_in_memory(Options {
            clock,
            // The test sweeps when it wants to.
            time_to_live: TimeToLiveOptions {
                sweep_interval: Duration::from_secs(3600),
                sweep_at_start: false,
                ..TimeToLiveOptions::default()
            },
            ..Options::default()
        })
        .unwrap();
        Fixture { db, now_millis }
    }

    fn advance(&self, seconds: u64) {
        self.now_millis.fetch_add(seconds * 1000, Ordering::SeqCst);
    }

    fn call(&self, operation: &str, body: Value) -> Value {
        self.db
            .execute(operation, body)
            .unwrap_or_else(|e| panic!("{operation}: {} {}", e.code.name(), e.message))
    }

    fn error(&self, operation: &str, body: Value) -> (String, String) {
        let e = self.db.execute(operation, body).unwrap_err();
        (e.code.name().to_string(), e.message)
    }

    fn create(&self) {
        self.call(
            "CreateTable",
            json!({
                "TableName": "Sessions",
                "AttributeDefinitions": [
                    {"AttributeName": "pk", "AttributeType": "S"},
                    {"AttributeName": "sk", "AttributeType": "S"},
                    {"AttributeName": "at", "AttributeType": "N"},
                    {"AttributeName": "user", "AttributeType": "S"}
                ],
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                              {"AttributeName": "sk", "KeyType": "RANGE"}],
                "LocalSecondaryIndexes": [{"IndexName": "ByAt",
                    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                                  {"AttributeName": "at", "KeyType": "RANGE"}],
                    "Projection": {"ProjectionType": "ALL"}}],
                "GlobalSecondaryIndexes": [{"IndexName": "ByUser",
                    "KeySchema": [{"AttributeName": "user", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"}}],
                "BillingMode": "PAY_PER_REQUEST",
                "StreamSpecification": {"StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES"}
            }),
        );
    }

    fn enable(&self) {
        self.call(
            "UpdateTimeToLive",
            json!({"TableName": "Sessions",
                   "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "expires"}}),
        );
    }

    fn put(&self, pk: &str, expires: Option<Value>) {
        let mut item =
            json!({"pk": {"S": pk}, "sk": {"S": "s"}, "at": {"N": "1"}, "user": {"S": "u"}});
        if let Some(expires) = expires {
            item["expires"] = expires;
        }
        self.call("PutItem", json!({"TableName": "Sessions", "Item": item}));
    }

    fn keys(&self) -> Vec<String> {
        let scan = self.call("Scan", json!({"TableName": "Sessions"}));
        let mut keys: Vec<String> = scan["Items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["pk"]["S"].as_str().unwrap().to_string())
            .collect();
        keys.sort();
        keys
    }

    fn count(&self, index: &str) -> u64 {
        self.call(
            "Scan",
            json!({"TableName": "Sessions", "IndexName": index, "Select": "COUNT"}),
        )["Count"]
            .as_u64()
            .unwrap()
    }
}

fn seconds(offset: i64) -> Value {
    json!({"N": (NOW_SECONDS as i64 + offset).to_string()})
}

#[test]
fn update_and_describe_follow_dynamodbs_rules_and_texts() {
    let f = Fixture::new();
    f.create();
    let describe = |f: &Fixture| f.call("DescribeTimeToLive", json!({"TableName": "Sessions"}));
    assert_eq!(
        describe(&f),
        json!({"TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}})
    );
    let (_, message) = f.error(
        "UpdateTimeToLive",
        json!({"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": false, "AttributeName": "expires"}}),
    );
    assert_eq!(message, "TimeToLive is already disabled");
    let updated = f.call(
        "UpdateTimeToLive",
        json!({"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "expires"}}),
    );
    assert_eq!(
        updated,
        json!({"TimeToLiveSpecification": {"Enabled": true, "AttributeName": "expires"}})
    );
    assert_eq!(
        describe(&f),
        json!({"TimeToLiveDescription": {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires"}})
    );
    let (_, message) = f.error(
        "UpdateTimeToLive",
        json!({"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "expires"}}),
    );
    assert_eq!(message, "TimeToLive is already enabled");
    for enabled in [true, false] {
        let (_, message) = f.error(
            "UpdateTimeToLive",
            json!({"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": enabled, "AttributeName": "other"}}),
        );
        assert_eq!(
            message,
            "TimeToLive is active on a different AttributeName: current AttributeName is expires"
        );
    }
    let (code, message) = f.error(
        "UpdateTimeToLive",
        json!({"TableName": "Missing", "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "expires"}}),
    );
    assert_eq!(code, "ResourceNotFoundException");
    assert_eq!(
        message,
        "Requested resource not found: Table: Missing not found"
    );
    let (code, message) = f.error(
        "UpdateTimeToLive",
        json!({"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": true, "AttributeName": ""}}),
    );
    assert_eq!(code, "ValidationException");
    assert_eq!(message, "1 validation error detected: Value '' at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must have length greater than or equal to 1");
    let (_, message) = f.error(
        "UpdateTimeToLive",
        json!({"TableName": "Sessions", "TimeToLiveSpecification": {"AttributeName": "expires"}}),
    );
    assert!(
        message.contains("Value null at 'timeToLiveSpecification.enabled'"),
        "{message}"
    );
    let (code, _) = f.error(
        "UpdateTimeToLive",
        json!({"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": "dog", "AttributeName": "expires"}}),
    );
    assert_eq!(code, "SerializationException");
    f.call(
        "UpdateTimeToLive",
        json!({"TableName": "Sessions", "TimeToLiveSpecification": {"Enabled": false, "AttributeName": "expires"}}),
    );
    assert_eq!(
        describe(&f),
        json!({"TimeToLiveDescription": {"TimeToLiveStatus": "DISABLED"}})
    );
}

#[test]
fn expired_items_are_deleted_like_deleteitem_and_others_stay() {
    let f = Fixture::new();
    f.create();
    f.enable();
    f.put("past", Some(seconds(-10)));
    f.put("future", Some(seconds(100)));
    f.put("string", Some(json!({"S": "1"})));
    f.put("ancient", Some(seconds(-(6 * 365 * 24 * 3600))));
    f.put("none", None);
    f.put(
        "fraction",
        Some(json!({"N": format!("{}.5", NOW_SECONDS - 1)})),
    );
    // Expired items stay readable until swept.
    assert_eq!(f.keys().len(), 6);
    let mut feed = f.db.stream_reader("Sessions", StreamStart::Latest).unwrap();

    assert_eq!(f.db.expire_now().unwrap(), 2);
    assert_eq!(f.keys(), ["ancient", "future", "none", "string"]);
    assert_eq!(f.count("ByAt"), 4, "the LSI entries went with the items");
    assert_eq!(f.count("ByUser"), 4, "the GSI entries went with the items");
    let described = f.call("DescribeTable", json!({"TableName": "Sessions"}));
    assert_eq!(described["Table"]["ItemCount"], 4);

    let records = feed.read(10).unwrap();
    assert_eq!(records.len(), 2);
    for record in &records {
        assert_eq!(record.event_name.as_str(), "REMOVE");
        assert!(record.by_service, "a Time to Live delete is the service's");
        assert!(record.old_image.is_some());
    }

    // Nothing more has expired: a sweep finds nothing.
    assert_eq!(f.db.expire_now().unwrap(), 0);
    // Time passes: the future item expires.
    f.advance(101);
    assert_eq!(f.db.expire_now().unwrap(), 1);
    assert_eq!(f.keys(), ["ancient", "none", "string"]);
}

#[test]
fn an_item_whose_expiry_moves_into_the_future_stays_and_updates_move_its_entry() {
    let f = Fixture::new();
    f.create();
    f.enable();
    f.put("moved", Some(seconds(-5)));
    // Moved into the future before the sweep: it stays.
    f.call(
        "UpdateItem",
        json!({"TableName": "Sessions", "Key": {"pk": {"S": "moved"}, "sk": {"S": "s"}},
               "UpdateExpression": "SET expires = :e", "ExpressionAttributeValues": {":e": seconds(50)}}),
    );
    assert_eq!(f.db.expire_now().unwrap(), 0);
    assert_eq!(f.keys(), ["moved"]);
    // Its Time to Live removed: it never expires.
    f.call(
        "UpdateItem",
        json!({"TableName": "Sessions", "Key": {"pk": {"S": "moved"}, "sk": {"S": "s"}},
               "UpdateExpression": "REMOVE expires"}),
    );
    f.advance(1000);
    assert_eq!(f.db.expire_now().unwrap(), 0);
    assert_eq!(f.keys(), ["moved"]);
}

#[test]
fn items_written_before_enabling_expire_too_and_the_setting_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let now_millis = Arc::new(AtomicU64::new(NOW_SECONDS * 1000));
    let options = || {
        let now = Arc::clone(&now_millis);
        Options {
            time_to_live: TimeToLiveOptions {
                sweep_interval: Duration::from_secs(3600),
                sweep_at_start: false,
                ..TimeToLiveOptions::default()
            },
            clock: Clock::from_fn(move || now.load(Ordering::SeqCst)),
            ..Options::default()
        }
    };
    {
        let db = Database::open(dir.path(), options()).unwrap();
        let f = Fixture {
            db,
            now_millis: Arc::clone(&now_millis),
        };
        f.create();
        for i in 0..600 {
            f.put(
                &format!("old{i:03}"),
                Some(seconds(if i % 2 == 0 { -1 } else { 1000 })),
            );
        }
        f.enable();
        // The backfill indexes the items stored before; wait for it.
        let mut deleted = 0;
        for _ in 0..200 {
            deleted += f.db.expire_now().unwrap();
            if deleted == 300 {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(deleted, 300);
        assert_eq!(f.keys().len(), 300);
    }
    let db = Database::open(dir.path(), options()).unwrap();
    let f = Fixture {
        db,
        now_millis: Arc::clone(&now_millis),
    };
    assert_eq!(
        f.call("DescribeTimeToLive", json!({"TableName": "Sessions"})),
        json!({"TimeToLiveDescription": {"TimeToLiveStatus": "ENABLED", "AttributeName": "expires"}})
    );
    f.advance(2000);
    assert_eq!(f.db.expire_now().unwrap(), 300);
    assert!(f.keys().is_empty());
}

/// Opens `dir` with an hour between sweeps, sweeping at start or not; the count of table
/// `Quick`'s items once `settle` has passed.
fn reopened_count(dir: &std::path::Path, sweep_at_start: bool, settle: Duration) -> u64 {
    let db = Database::open(
        dir,
        Options {
            time_to_live: TimeToLiveOptions {
                sweep_interval: Duration::from_secs(3600),
                sweep_at_start,
                ..TimeToLiveOptions::default()
            },
            ..Options::default()
        },
    )
    .unwrap();
    let started = std::time::Instant::now();
    loop {
        let count = db
            .execute("Scan", json!({"TableName": "Quick", "Select": "COUNT"}))
            .unwrap()["Count"]
            .as_u64()
            .unwrap();
        if count == 0 || started.elapsed() >= settle {
            return count;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_first_sweep_comes_when_the_database_opens_not_one_interval_later() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), Options::default()).unwrap();
        db.execute(
            "CreateTable",
            json!({
                "TableName": "Quick",
                "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                "BillingMode": "PAY_PER_REQUEST"
            }),
        )
        .unwrap();
        db.execute(
            "UpdateTimeToLive",
            json!({"TableName": "Quick", "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "ttl"}}),
        )
        .unwrap();
    }
    let put_expired = || {
        let db = Database::open(
            dir.path(),
            Options {
                time_to_live: TimeToLiveOptions {
                    sweep_interval: Duration::from_secs(3600),
                    sweep_at_start: false,
                    ..TimeToLiveOptions::default()
                },
                ..Options::default()
            },
        )
        .unwrap();
        db.execute(
            "PutItem",
            json!({"TableName": "Quick", "Item": {"pk": {"S": "a"}, "ttl": {"N": "1700000000"}}}),
        )
        .unwrap();
    };
    // Without the sweep at start, an hour's interval keeps the expired item past a reopen
    // (the upkeep ticks at least once a second: 1.5 s would have shown a sweep).
    put_expired();
    assert_eq!(
        reopened_count(dir.path(), false, Duration::from_millis(1500)),
        1
    );
    // With it (the default), the reopened database deletes it at once.
    assert_eq!(reopened_count(dir.path(), true, Duration::from_secs(10)), 0);
}

#[test]
fn the_background_sweep_deletes_on_its_own() {
    let db = Database::open_in_memory(Options {
        time_to_live: TimeToLiveOptions {
            sweep_interval: Duration::from_millis(20),
            ..TimeToLiveOptions::default()
        },
        ..Options::default()
    })
    .unwrap();
    db.execute(
        "CreateTable",
        json!({
            "TableName": "Quick",
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "BillingMode": "PAY_PER_REQUEST"
        }),
    )
    .unwrap();
    db.execute(
        "UpdateTimeToLive",
        json!({"TableName": "Quick", "TimeToLiveSpecification": {"Enabled": true, "AttributeName": "ttl"}}),
    )
    .unwrap();
    db.execute(
        "PutItem",
        json!({"TableName": "Quick", "Item": {"pk": {"S": "a"}, "ttl": {"N": "1700000000"}}}),
    )
    .unwrap();
    for _ in 0..250 {
        let count = db
            .execute("Scan", json!({"TableName": "Quick", "Select": "COUNT"}))
            .unwrap()["Count"]
            .as_u64()
            .unwrap();
        if count == 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the expired item was never swept");
}

#[test]
fn check_finds_the_expiry_index_sound_and_reports_a_damaged_one() {
    let f = Fixture::new();
    f.create();
    f.enable();
    for i in 0..20 {
        f.put(&format!("k{i:02}"), Some(seconds(i)));
    }
    f.put("plain", None);
    // The check leaves an index still being backfilled alone: wait for it.
    for _ in 0..500 {
        let table = f.db.table("Sessions").unwrap();
        if table
            .time_to_live
            .as_ref()
            .is_some_and(|ttl| ttl.backfilled)
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let report = f.db.check().unwrap();
    assert!(report.is_sound(), "{:?}", report.problems);

    // Remove one entry behind the write path's back: the check names it.
    let table = f.db.table("Sessions").unwrap();
    let ttl = table.time_to_live.clone().unwrap();
    let (key, _) =
        f.db.lsm()
            .scan(
                ttl.tree,
                std::ops::Bound::Unbounded,
                std::ops::Bound::Unbounded,
                shoal_engine::Direction::Forward,
                None,
                1,
            )
            .unwrap()
            .remove(0);
    let mut batch = shoal_engine::WriteBatch::new();
    batch.delete(ttl.tree, &key).unwrap();
    f.db.lsm().write(batch).unwrap();
    let report = f.db.check().unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert!(
        report.problems[0].contains("expiry index"),
        "{:?}",
        report.problems
    );

    // An entry for an item that does not expire then is reported too.
    let mut batch = shoal_engine::WriteBatch::new();
    let mut wrong = key.clone();
    wrong[7] ^= 1;
    batch.put(ttl.tree, &key, &[]).unwrap();
    batch.put(ttl.tree, &wrong, &[]).unwrap();
    f.db.lsm().write(batch).unwrap();
    let report = f.db.check().unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert!(report.problems[0].contains("is not what its item derives"));
}
