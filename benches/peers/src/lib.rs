//! Bench-only package; see benches/.
