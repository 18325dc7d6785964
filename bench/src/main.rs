//! `nvpage-bench`: the storage benchmark (issue 2) now; the log and TPC-H comparisons later.

#![forbid(unsafe_code)]

fn main() {}
