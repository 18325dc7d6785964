//! The buffer manager's integration tests, built as one binary: one module per behaviour.

#[path = "../common/mod.rs"]
mod common;

mod a_writer_short_of_frames_waits_for_readers;
mod model_equivalence;
mod se2_latching;
mod sealed_from_old_bytes;
mod smoke;
mod storing_from_inside_with_file_page_never_hangs;
mod the_version_store_matches_a_model;
mod threads_under_pressure;
mod transactions_beside_a_reader_match_a_model_on_a_small_pool;
mod versions_kept_as_lines_match_a_model;
mod writeback_hook_crash;
