//! The log's integration tests, built as one binary: one module per behaviour.

#[path = "../common/mod.rs"]
mod common;

mod a_directory_is_not_taken_for_a_log;
mod a_full_log_refuses_even_empty_appends;
mod a_growing_log_survives_power_loss;
mod api_edges;
mod append_inside_walk;
mod appenders_sharing_a_core;
mod crash_atomicity;
mod create_gives_the_file_the_mode_asked_for;
mod create_with_size_zero_builds_the_log_in_an_existing_file;
mod cut_and_flip_never_panic;
mod damaged_files_are_typed_errors;
mod line_path_matches_gathered_path;
mod many_appenders;
mod many_appenders_fill_the_log;
mod older_log_formats_still_open;
mod persist_failure_poisons;
mod racing_appenders_grow_the_log;
mod walk_of_an_empty_raw_log_calls_once_with_chunk_size_zero;
mod watermark_recovery;
