//! placeholder; SimFs is being written
