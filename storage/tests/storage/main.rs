//! The storage layer's integration tests, built as one binary: one module per behaviour.

#[path = "../common/mod.rs"]
mod common;

mod a_path_that_is_not_a_file_is_refused;
mod a_read_racing_a_restore_leaves_the_restored_bytes_unverified;
mod a_store_racing_a_restore_leaves_the_restored_bytes_unverified;
mod cacheline_sync_covers_kernel_writes;
mod cacheline_write_durable_on_return;
mod changed_lines_stored_alone;
mod checksum_from_changed_ranges;
mod corrupt_header_refused;
mod corrupt_page_detected;
mod damaged_file_refused;
mod durability_says_how_pages_are_written;
mod growth_limits_refused;
mod growth_survives_crash;
mod invalid_arguments_refused;
mod layer_equivalence;
mod lines_and_a_stored_range_persist_together;
mod pages_round_trip;
mod persist_error_poisons;
mod persist_mode_selection;
mod second_open_refused;
mod sim_crash_semantics;
mod sim_fault_injection;
mod unsynced_pages_never_silently_wrong;
