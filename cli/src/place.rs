//! Where a command's files are: every command takes a database directory (and `--log-dir` for a
//! log kept apart); the file commands also take the file itself. An error here names the path
//! and what it is instead of what was wanted: missing, a directory that holds no database, a
//! special file.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// What went wrong, as the one line `main` prints after `nvpage: `.
pub type Failure = String;

/// Where a database's files are: its directory, and the log's if it lives apart
/// (`--log-dir`, as the database was opened with `Builder::log_dir`).
#[derive(Clone, Copy, Debug)]
pub struct Place<'a> {
    /// The database directory.
    pub path: &'a Path,
    /// The log's directory, if not the database's.
    pub log_dir: Option<&'a Path>,
}

impl Place<'_> {
    /// The log file.
    pub fn log_path(&self) -> PathBuf {
        self.log_dir.unwrap_or(self.path).join(nvpage::LOG_FILE)
    }

    /// `--log-dir D ` if the database keeps its log apart, for a command line shown to the user.
    pub fn log_dir_arg(&self) -> String {
        self.log_dir.map(|d| format!("--log-dir {} ", d.display())).unwrap_or_default()
    }
}

/// The file `name` (the data file or the log) of the database at `path`, or `path` itself if it
/// is a file; `log_dir`, where given, is the directory holding it instead of `path`.
pub fn file(path: &Path, log_dir: Option<&Path>, name: &str) -> Result<PathBuf, Failure> {
    let shown = path.display();
    let what = if name == nvpage::LOG_FILE { "log file" } else { "data file" };
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        ErrorKind::NotFound => format!("{shown}: no such database directory or {what}"),
        _ => format!("{shown}: cannot access it: {e}"),
    })?;
    if meta.is_file() {
        return match log_dir {
            None => Ok(path.into()),
            Some(_) => Err(format!(
                "{shown} is a file: with --log-dir, give the database directory (the log is the \
                 one in the --log-dir directory)"
            )),
        };
    }
    if !meta.is_dir() {
        let kind = nvpage_storage::file::file_kind(&meta);
        return Err(format!("{shown} is {kind}, not a database directory or a file of one"));
    }
    let dir = log_dir.unwrap_or(path);
    let file = dir.join(name);
    match file.try_exists() {
        Ok(true) => Ok(file),
        Ok(false) if log_dir.is_none() && name == nvpage::LOG_FILE => Err(format!(
            "{}: no {name} in this directory: not a database directory, or its database keeps \
             its log apart (give that directory with --log-dir)",
            dir.display()
        )),
        Ok(false) => {
            Err(format!("{}: no {name} in this directory: not a database directory", dir.display()))
        }
        Err(e) => Err(format!("{}: cannot access it: {e}", file.display())),
    }
}
