//! `nvpage sql DIR`: SQL over a database (the `nvpage-sql` crate), from `-c` and `-f` in the
//! order given, from standard input, or in an interactive shell.
//!
//! All statements of one invocation run in one session, in order, so `BEGIN` … `ROLLBACK` may
//! span them; the first that fails ends the run (its error on stderr, exit status 1). A result
//! goes to stdout whole once it is complete, so that a statement that fails prints nothing but
//! its error — up to 64 MiB of it; a larger result streams, and a failure after it began prints
//! the error and exits 1.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::{ArgMatches, Args, ValueEnum};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::dataframe::DataFrame;
use datafusion::sql::parser::Statement;
use futures::StreamExt;
use nvpage::{Database, Layer};
use nvpage_sql::Session;

use crate::place::Failure;

/// Results up to this size are printed only once complete.
const BUFFERED_BYTES: usize = 64 << 20;

/// `nvpage sql`'s arguments.
#[derive(Args)]
pub struct SqlArgs {
    /// The database directory (made if missing, unless --read-only).
    #[arg(required_unless_present = "cluster")]
    pub path: Option<PathBuf>,
    /// Run the statements across the workers of a cluster file instead of on one database (see
    /// `nvpage worker`).
    #[cfg(feature = "cluster")]
    #[arg(long, value_name = "FILE", conflicts_with_all = ["path", "log_dir", "layer", "read_only"])]
    pub cluster: Option<PathBuf>,
    /// The log's directory, for a database whose log lives apart (`Builder::log_dir`).
    #[arg(long)]
    pub log_dir: Option<PathBuf>,
    /// The file layer: pread, se1 or se2 (default: the best compiled in).
    #[arg(long, value_parser = parse_layer)]
    pub layer: Option<Layer>,
    /// Open read-only (beside other read-only openers; statements that write are refused).
    #[arg(long)]
    pub read_only: bool,
    /// A statement (or several, separated by `;`) to run; may be given more than once.
    #[arg(short = 'c', long = "command", value_name = "SQL")]
    pub commands: Vec<String>,
    /// A file of statements to run; may be given more than once, and mixed with -c.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// How results are printed.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Print each statement's time on stderr (with --cluster, also the bytes it moved over the
    /// network and the rows through its stage boundaries, between workers and to the
    /// coordinator).
    #[arg(long)]
    pub timing: bool,
}

/// How results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// An aligned table, with a header.
    Table,
    /// CSV: one header line, then the rows (the header also for an empty result).
    Csv,
    /// A JSON array of one object per row.
    Json,
}

fn parse_layer(s: &str) -> Result<Layer, String> {
    s.parse::<Layer>().map_err(|e| e.to_string())
}

/// Where statements come from, in the order the command line gave them.
enum Source {
    Text(String),
    File(PathBuf),
}

/// The `-c` and `-f` arguments in command-line order.
fn sources(args: &SqlArgs, m: &ArgMatches) -> Vec<Source> {
    let mut v: Vec<(usize, Source)> = Vec::new();
    if let Some(idx) = m.indices_of("commands") {
        v.extend(idx.zip(args.commands.iter()).map(|(i, c)| (i, Source::Text(c.clone()))));
    }
    if let Some(idx) = m.indices_of("files") {
        v.extend(idx.zip(args.files.iter()).map(|(i, f)| (i, Source::File(f.clone()))));
    }
    v.sort_by_key(|(i, _)| *i);
    v.into_iter().map(|(_, s)| s).collect()
}

/// Runs `nvpage sql`.
pub fn run(args: &SqlArgs, m: &ArgMatches) -> Result<(), Failure> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the query runtime: {e}"))?;
    let runner = rt.block_on(Runner::open(args))?;
    let sources = sources(args, m);
    let out = &mut std::io::stdout().lock();
    rt.block_on(async {
        if sources.is_empty() {
            if std::io::stdin().is_terminal() {
                return shell(&runner, args, out).await;
            }
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(|e| format!("stdin: {e}"))?;
            return script(&runner, args, &text, out).await;
        }
        for s in sources {
            let text = match s {
                Source::Text(t) => t,
                Source::File(f) => read(&f)?,
            };
            script(&runner, args, &text, out).await?;
        }
        Ok(())
    })
}

/// What runs the statements: a session over one database, or a cluster's coordinator.
enum Runner {
    Local(Session),
    #[cfg(feature = "cluster")]
    Cluster(nvpage_cluster::Coordinator),
}

impl Runner {
    async fn open(args: &SqlArgs) -> Result<Self, Failure> {
        #[cfg(feature = "cluster")]
        if let Some(file) = &args.cluster {
            let cluster = nvpage_cluster::Cluster::load(file).map_err(|e| e.to_string())?;
            let c =
                nvpage_cluster::Coordinator::connect(cluster).await.map_err(|e| e.to_string())?;
            for t in c.uneven_tables() {
                eprintln!("nvpage: not queryable, the workers differ: {t}");
            }
            return Ok(Self::Cluster(c));
        }
        let Some(path) = &args.path else { return Err("name a database directory".into()) };
        let mut b = Database::builder().read_only(args.read_only).create(!args.read_only);
        if let Some(layer) = args.layer {
            b = b.layer(layer);
        }
        if let Some(d) = &args.log_dir {
            b = b.log_dir(d);
        }
        let db = Arc::new(b.open(path).map_err(|e| e.to_string())?);
        Ok(Self::Local(Session::new(db).map_err(|e| e.to_string())?))
    }

    async fn run(&self, st: Statement) -> Result<DataFrame, Failure> {
        match self {
            Self::Local(s) => s.run(st).await.map_err(|e| e.to_string()),
            #[cfg(feature = "cluster")]
            Self::Cluster(c) => c.run(st).await.map_err(|e| e.to_string()),
        }
    }

    fn in_transaction(&self) -> bool {
        match self {
            Self::Local(s) => s.in_transaction(),
            #[cfg(feature = "cluster")]
            Self::Cluster(_) => false,
        }
    }
}

fn read(f: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))
}

/// Runs every statement of `text` in order; the first failure ends it.
async fn script(
    runner: &Runner,
    args: &SqlArgs,
    text: &str,
    out: &mut impl Write,
) -> Result<(), Failure> {
    for st in Session::parse(text).map_err(|e| e.to_string())? {
        statement(runner, args, st, out).await?;
    }
    Ok(())
}

/// Runs one statement and prints its result.
async fn statement(
    runner: &Runner,
    args: &SqlArgs,
    st: Statement,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let started = Instant::now();
    let df = runner.run(st).await?;
    let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
    let ctx = Arc::new(df.task_ctx());
    let plan = df.create_physical_plan().await.map_err(|e| e.to_string())?;
    let mut stream =
        datafusion::physical_plan::execute_stream(plan.clone(), ctx).map_err(|e| e.to_string())?;
    let mut printer = Printer::new(args.format, schema);
    let mut held: Vec<RecordBatch> = Vec::new();
    let mut held_bytes = 0usize;
    let mut streaming = false;
    while let Some(batch) = stream.next().await {
        let batch = match batch {
            Ok(b) => b,
            Err(e) => {
                if streaming {
                    let _ = out.flush();
                }
                return Err(e.to_string());
            }
        };
        if streaming {
            printer.write(&[batch], out)?;
            continue;
        }
        held_bytes += batch.get_array_memory_size();
        held.push(batch);
        if held_bytes > BUFFERED_BYTES {
            streaming = true;
            printer.write(&std::mem::take(&mut held), out)?;
        }
    }
    printer.write(&held, out)?;
    printer.finish(out)?;
    out.flush().map_err(|e| format!("stdout: {e}"))?;
    if args.timing {
        eprintln!("Time: {:.3} ms", started.elapsed().as_secs_f64() * 1e3);
        #[cfg(feature = "cluster")]
        if let Runner::Cluster(_) = runner {
            let t = nvpage_cluster::Traffic::of(plan).await.map_err(|e| e.to_string())?;
            let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
            eprintln!(
                "Moved: {:.3} MiB between workers, {:.3} MiB to the coordinator over the network; \
                 rows through stage boundaries {} between workers, {} to the coordinator",
                mib(t.between_workers.bytes),
                mib(t.to_coordinator.bytes),
                t.between_workers.rows,
                t.to_coordinator.rows,
            );
        }
    }
    Ok(())
}

/// Prints a statement's result in one format, a piece at a time.
struct Printer {
    format: Format,
    schema: SchemaRef,
    /// Whether anything (the CSV header, the JSON array's opening) has been written.
    begun: bool,
    rows: usize,
}

impl Printer {
    fn new(format: Format, schema: SchemaRef) -> Self {
        Self { format, schema, begun: false, rows: 0 }
    }

    fn write(&mut self, batches: &[RecordBatch], out: &mut impl Write) -> Result<(), Failure> {
        // A statement with no result (CREATE, BEGIN, …) prints nothing.
        if self.schema.fields().is_empty() {
            return Ok(());
        }
        let io = |e: std::io::Error| format!("stdout: {e}");
        match self.format {
            Format::Table => {
                let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
                if rows > 0 {
                    let t = datafusion::arrow::util::pretty::pretty_format_batches(batches)
                        .map_err(|e| e.to_string())?;
                    writeln!(out, "{t}").map_err(io)?;
                }
                self.rows += rows;
            }
            Format::Csv => {
                let mut w = datafusion::arrow::csv::WriterBuilder::new()
                    .with_header(!self.begun)
                    .build(&mut *out);
                if !self.begun {
                    w.write(&RecordBatch::new_empty(self.schema.clone()))
                        .map_err(|e| e.to_string())?;
                }
                for b in batches {
                    w.write(b).map_err(|e| e.to_string())?;
                }
            }
            Format::Json => {
                for b in batches {
                    let mut buf = Vec::new();
                    let mut w = datafusion::arrow::json::ArrayWriter::new(&mut buf);
                    w.write(b).map_err(|e| e.to_string())?;
                    w.finish().map_err(|e| e.to_string())?;
                    // Each piece is an array: its elements join the one array of the result.
                    let body = buf.strip_prefix(b"[").and_then(|b| b.strip_suffix(b"]"));
                    if let Some(body) = body.filter(|b| !b.is_empty()) {
                        let sep: &[u8] = if self.rows > 0 {
                            b","
                        } else if self.begun {
                            b""
                        } else {
                            b"["
                        };
                        out.write_all(sep).map_err(io)?;
                        out.write_all(body).map_err(io)?;
                        self.rows += b.num_rows();
                        self.begun = true;
                    }
                }
            }
        }
        if self.format == Format::Csv {
            self.begun = true;
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut impl Write) -> Result<(), Failure> {
        if self.schema.fields().is_empty() {
            return Ok(());
        }
        let io = |e: std::io::Error| format!("stdout: {e}");
        match self.format {
            Format::Table if self.rows == 0 && !self.schema.fields().is_empty() => {
                let empty = RecordBatch::new_empty(self.schema.clone());
                let t = datafusion::arrow::util::pretty::pretty_format_batches(&[empty])
                    .map_err(|e| e.to_string())?;
                writeln!(out, "{t}").map_err(io)?;
            }
            Format::Csv if !self.begun => self.write(&[], out)?,
            Format::Json => {
                let tail: &[u8] = if self.begun { b"]\n" } else { b"[]\n" };
                out.write_all(tail).map_err(io)?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// The interactive shell: statements end at `;`, with line editing and a history kept in
/// `~/.nvpage_history`.
async fn shell(runner: &Runner, args: &SqlArgs, out: &mut impl Write) -> Result<(), Failure> {
    let mut rl = rustyline::DefaultEditor::new().map_err(|e| format!("the line editor: {e}"))?;
    let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".nvpage_history"));
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    let mut pending = String::new();
    loop {
        let prompt = match (pending.is_empty(), runner.in_transaction()) {
            (true, false) => "nvpage> ",
            (true, true) => "nvpage*> ",
            (false, _) => "     -> ",
        };
        match rl.readline(prompt) {
            Ok(line) => {
                pending.push_str(&line);
                pending.push('\n');
                if !line.trim_end().ends_with(';') {
                    continue;
                }
                let text = std::mem::take(&mut pending);
                let _ = rl.add_history_entry(text.trim());
                if let Err(e) = script(runner, args, &text, out).await {
                    eprintln!("nvpage: {e}");
                }
            }
            Err(rustyline::error::ReadlineError::Interrupted) => pending.clear(),
            Err(rustyline::error::ReadlineError::Eof) => break,
            Err(e) => return Err(format!("the line editor: {e}")),
        }
    }
    if let Some(h) = &history {
        let _ = rl.save_history(h);
    }
    Ok(())
}
