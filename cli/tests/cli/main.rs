//! The command line's integration tests, built as one binary: one module per behaviour.

mod cluster_workers;
mod db_commands;
mod every_command_takes_the_database_directory;
mod inspecting_beside_an_app;
mod log_commands;
mod open_errors_name_the_path_once;
mod sql_command;
