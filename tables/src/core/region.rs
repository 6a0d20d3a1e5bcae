//! The region named in the ARNs an operation answers with.
//!
//! DynamoDB names a table by the region a request was sent to, and so does Shoal, which
//! serves one database to every region: a server passes each request's region (its SigV4
//! credential scope) to `Database::execute_json_text_in_region`, which makes it the region of
//! every ARN formatted while the operation runs on that thread. Outside such a call (the
//! embedded API, background work) ARNs name [`ARN_REGION`], DynamoDB Local's `ddblocal`.
//! ARNs a client sends are accepted whatever their region.

use std::cell::RefCell;

/// The region of the ARNs Shoal reports outside a request that names one (DynamoDB Local's
/// convention; see `region`), and the account of all of them.
pub const ARN_REGION: &str = "ddblocal";
pub const ARN_ACCOUNT: &str = "000000000000";

/// `arn:aws:dynamodb:<region>:000000000000:table/<name>`, in the region of the request
/// being served (`ddblocal` outside one).
pub fn table_arn(table_name: &str) -> String {
    let region = current();
    format!("arn:aws:dynamodb:{region}:{ARN_ACCOUNT}:table/{table_name}")
}

thread_local! {
    static REQUEST_REGION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The region of the operation running on this thread.
pub fn current() -> String {
    with_current(str::to_owned)
}

/// Calls `read` with the region of the operation running on this thread, without copying
/// it (every data-plane request resolves its table in its region).
pub fn with_current<T>(read: impl FnOnce(&str) -> T) -> T {
    REQUEST_REGION.with(|region| read(region.borrow().as_deref().unwrap_or(ARN_REGION)))
}

/// Runs `operation` with `region` (when given) as the region of its ARNs; the previous one
/// is back afterwards, a panic included.
pub fn with_region<T>(region: Option<&str>, operation: impl FnOnce() -> T) -> T {
    struct Restore(Option<String>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            REQUEST_REGION.with(|region| *region.borrow_mut() = previous);
        }
    }
    let previous = REQUEST_REGION.with(|slot| slot.replace(region.map(str::to_owned)));
    let _restore = Restore(previous);
    operation()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_region_holds_for_the_call_only() {
        assert_eq!(current(), "ddblocal");
        let inside = with_region(Some("eu-west-1"), current);
        assert_eq!(inside, "eu-west-1");
        assert_eq!(current(), "ddblocal");
        assert_eq!(with_region(None, current), "ddblocal");
        let panicked = std::panic::catch_unwind(|| {
            with_region(Some("ap-south-1"), || panic!("operation failed"))
        });
        assert!(panicked.is_err());
        assert_eq!(current(), "ddblocal");
    }
}
