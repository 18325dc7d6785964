//! The SQL scenario tests, one module each, in one test binary: each binary links DataFusion,
//! which makes linking it the largest part of building a test, so they share one.

mod common;

mod a_clustered_scan_inside_a_transaction_reads_each_row_once_in_order;
mod a_clustered_table_is_read_in_key_order;
mod a_primary_key_is_the_tables_own;
mod a_query_reads_one_snapshot_and_lets_go;
mod clustered_tables_answer_through_sql;
mod create_table_with_clustered_storage;
mod data_in_and_out_through_files;
mod every_type_round_trips_through_sql;
mod index_forms_an_index_cannot_honour_are_refused;
mod integer_arithmetic_refuses_to_overflow;
mod key_ranges_read_only_their_clustered_leaves;
mod long_rows_of_a_clustered_table_answer_as_a_heap_tables_do;
mod narrow_predicates_read_an_index;
mod pushed_filters_answer_as_datafusion_does;
mod run_time_filters_narrow_the_scan;
mod statements_are_transactions;
mod updates_and_deletes_change_clustered_rows_by_key;
