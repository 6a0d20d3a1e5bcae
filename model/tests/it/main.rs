//! The data model's integration tests (property tests of its codecs), as one test binary:
//! the crate and its dependencies are linked once, not once per file. Each module is one
//! concern (its docs say which).

mod json_props;
mod keycodec_props;
mod number_props;
