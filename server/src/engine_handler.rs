//! The engine behind the transport: every operation goes to `Database::execute`.

use std::fmt::Write as _;
use std::sync::Arc;

use engine::Database;
use model::ApiError;
use serde_json::Value;

use crate::handler::DynamoHandler;

/// Serves a [`Database`] over DynamoDB's protocol.
pub struct EngineHandler {
    database: Arc<Database>,
}

impl EngineHandler {
    pub fn new(database: Arc<Database>) -> EngineHandler {
        EngineHandler { database }
    }
}

impl DynamoHandler for EngineHandler {
    fn handle(&self, operation: &str, body: Value) -> Result<Value, ApiError> {
        self.database.execute(operation, body)
    }

    fn operations(&self) -> &[&'static str] {
        engine::SUPPORTED_OPERATIONS
    }

    fn render_metrics(&self, out: &mut String) {
        let wal = self.database.lsm().wal_stats();
        // Writing to a String cannot fail.
        let _ = write!(
            out,
            "# TYPE shoal_wal_commits_total counter\nshoal_wal_commits_total {}\n\
             # TYPE shoal_wal_groups_total counter\nshoal_wal_groups_total {}\n\
             # TYPE shoal_wal_syncs_total counter\nshoal_wal_syncs_total {}\n\
             # TYPE shoal_wal_bytes_written_total counter\nshoal_wal_bytes_written_total {}\n\
             # TYPE shoal_wal_live_bytes gauge\nshoal_wal_live_bytes {}\n",
            wal.commits,
            wal.groups,
            wal.syncs,
            wal.bytes_written,
            self.database.lsm().wal_live_bytes(),
        );
    }
}
