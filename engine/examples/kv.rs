//! The storage engine on its own: open a database, write a batch across two trees, read at a
//! snapshot and walk a range. Run it twice to see the first run's data recovered:
//!
//! ```sh
//! cargo run -p shoal-engine --example kv -- /tmp/shoal-kv
//! ```

use std::ops::Bound;
use std::path::PathBuf;

use shoal_engine::{Db, DbOptions, Direction, WriteBatch};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir: PathBuf = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("shoal-kv-example"));
    let db = Db::open(&dir, DbOptions::default())?;
    // A tree is created once; a reopened database knows it by name.
    let users = match db.tree_id("users") {
        Some(id) => id,
        None => db.create_tree("users")?,
    };
    let by_email = match db.tree_id("users_by_email") {
        Some(id) => id,
        None => db.create_tree("users_by_email")?,
    };

    let before = db.snapshot();
    let run = db
        .scan(
            users,
            Bound::Unbounded,
            Bound::Unbounded,
            Direction::Forward,
            None,
            usize::MAX,
        )?
        .len();
    let key = format!("user#{run:04}");
    let email = format!("user{run}@example.com");
    // The user and its email index entry commit together or not at all.
    let mut batch = WriteBatch::new();
    batch.put(users, key.as_bytes(), email.as_bytes())?;
    batch.put(by_email, email.as_bytes(), key.as_bytes())?;
    db.write(batch)?;

    println!(
        "{} holds {} users (this run added {key})",
        dir.display(),
        run + 1
    );
    println!(
        "at the snapshot taken before the write: {:?}",
        db.get(users, key.as_bytes(), Some(&before))?
    );
    let mut cursor = db.iter(
        users,
        Bound::Unbounded,
        Bound::Unbounded,
        Direction::Reverse,
        None,
    )?;
    let mut shown = 0;
    while shown < 3 && cursor.advance()? {
        println!(
            "  {} = {}",
            String::from_utf8_lossy(cursor.key()),
            String::from_utf8_lossy(cursor.value())
        );
        shown += 1;
    }
    Ok(())
}
