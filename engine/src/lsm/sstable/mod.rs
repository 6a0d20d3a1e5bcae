//! SSTables (being written).
