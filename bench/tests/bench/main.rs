//! The benchmark's integration tests, built as one binary: one module per behaviour.

#[path = "../tpch_reference/mod.rs"]
mod tpch_reference;

mod engine_bench_systems_do_the_same_work;
mod kv_engines_return_the_same_values;
mod refresh_json_report;
mod refresh_pairs_restore_the_loaded_rows;
mod tpch_answers_match_reference;
mod tpch_cluster_agrees;
mod tpch_default_report_fits_one_screen;
mod tpch_json_report;
mod tpch_postgres_agrees;
mod tpch_postgres_cpu_per_query;
mod tpch_progress_without_a_terminal;
mod tpch_runner_options;
mod tpch_scaling_table;
mod tpch_summary_comes_first;
