//! The engines the benchmarks compare nvpage with, each compiled in only with its Cargo feature
//! (`sqlite`, `lmdb`, `redb`, `sql`; `compare` turns on all four): they are built from source, C code
//! included, and the main command runs none of them. Asking a build for one it left out is an
//! error that names the feature and the command that builds it.

/// An engine nvpage is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// SQLite through rusqlite (bundled): the `engine` benchmark's small transactions and `kv`.
    Sqlite,
    /// LMDB through heed: `kv`.
    Lmdb,
    /// redb: `kv`.
    Redb,
    /// DataFusion, through nvpage-sql and over its own in-memory tables: `tpch --sql`.
    Sql,
}

impl Comparison {
    /// The Cargo feature that compiles the engine in.
    pub fn feature(self) -> &'static str {
        match self {
            Comparison::Sqlite => "sqlite",
            Comparison::Lmdb => "lmdb",
            Comparison::Redb => "redb",
            Comparison::Sql => "sql",
        }
    }

    /// Whether this build has the engine.
    pub fn is_compiled(self) -> bool {
        match self {
            Comparison::Sqlite => cfg!(feature = "sqlite"),
            Comparison::Lmdb => cfg!(feature = "lmdb"),
            Comparison::Redb => cfg!(feature = "redb"),
            Comparison::Sql => cfg!(feature = "sql"),
        }
    }
}

/// What to say when `subcommand` is asked for engines this build left out (`missing`, not empty):
/// the features they need, and the command that builds them in.
pub fn not_compiled(missing: &[Comparison], subcommand: &str) -> String {
    let names: Vec<String> = missing.iter().map(|c| format!("`{}`", c.feature())).collect();
    let list = match names.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    };
    let features: Vec<&str> = missing.iter().map(|c| c.feature()).collect();
    format!(
        "built without the {list} feature{}: cargo run --release -p nvpage-bench --features {} \
         -- {subcommand} …",
        if missing.len() == 1 { "" } else { "s" },
        features.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_names_the_features_and_the_command() {
        assert_eq!(
            not_compiled(&[Comparison::Lmdb], "kv"),
            "built without the `lmdb` feature: cargo run --release -p nvpage-bench --features \
             lmdb -- kv …"
        );
        let two = not_compiled(&[Comparison::Lmdb, Comparison::Redb], "kv");
        assert!(two.starts_with("built without the `lmdb` and `redb` features: "), "{two}");
        assert!(two.contains("--features lmdb,redb -- kv"), "{two}");
    }
}
