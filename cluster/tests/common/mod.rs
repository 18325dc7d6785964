//! Workers in this process, each over a database of its own, for the cluster's tests.

use std::sync::Arc;

use nvpage::Database;
use nvpage_cluster::{Cluster, Coordinator, Traffic};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

pub const TOKEN: &str = "a-test-token";

pub struct Workers {
    pub dirs: Vec<tempfile::TempDir>,
    stops: Vec<oneshot::Sender<()>>,
    tasks: Vec<tokio::task::JoinHandle<nvpage_cluster::Result<()>>>,
    pub addresses: Vec<String>,
    /// The cluster file's `[tables.*]`.
    tables: &'static str,
}

/// `n` workers over new databases; `tables` is the cluster file's `[tables.*]`.
pub async fn start(n: usize, tables: &'static str) -> Workers {
    start_in((0..n).map(|_| tempfile::tempdir().unwrap()).collect(), tables).await
}

/// Workers over the databases in `dirs`, one each.
pub async fn start_in(dirs: Vec<tempfile::TempDir>, tables: &'static str) -> Workers {
    let mut w = Workers { dirs: vec![], stops: vec![], tasks: vec![], addresses: vec![], tables };
    for dir in dirs {
        let db = Database::open(dir.path().join("db")).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        w.addresses.push(listener.local_addr().unwrap().to_string());
        let (tx, rx) = oneshot::channel::<()>();
        let stop = async move {
            let _ = rx.await;
        };
        w.tasks.push(tokio::spawn(nvpage_cluster::worker::serve(db, listener, TOKEN, stop)));
        w.stops.push(tx);
        w.dirs.push(dir);
    }
    w
}

impl Workers {
    /// The cluster file of these workers, with `token`.
    pub fn cluster_file(&self, token: &str) -> String {
        let mut s = format!("token = \"{token}\"\n");
        for a in &self.addresses {
            s.push_str(&format!("[[workers]]\naddress = \"{a}\"\n"));
        }
        s.push_str(self.tables);
        s
    }

    /// A coordinator of these workers.
    #[allow(dead_code)]
    pub async fn coordinator(&self) -> Coordinator {
        let cluster = Cluster::parse(&self.cluster_file(TOKEN), None).unwrap();
        Coordinator::connect(cluster).await.unwrap()
    }

    /// Stops every worker; their databases' directories.
    pub async fn stop(self) -> Vec<tempfile::TempDir> {
        for s in self.stops {
            let _ = s.send(());
        }
        for t in self.tasks {
            t.await.unwrap().unwrap();
        }
        self.dirs
    }
}

/// Runs `sql` through `c` to its end, its result unread.
#[allow(dead_code)]
pub async fn exec(c: &Coordinator, sql: &str) {
    c.sql(sql).await.unwrap().collect().await.unwrap();
}

/// Runs `sql` through `c` to its end; its rows, and what it moved.
#[allow(dead_code)]
pub async fn moved(c: &Coordinator, sql: &str) -> (usize, Traffic) {
    let df = c.sql(sql).await.unwrap();
    let ctx = Arc::new(df.task_ctx());
    let plan = df.create_physical_plan().await.unwrap();
    let batches = datafusion::physical_plan::collect(plan.clone(), ctx).await.unwrap();
    let rows = batches.iter().map(|b| b.num_rows()).sum();
    (rows, Traffic::of(plan).await.unwrap())
}

/// `orders (id, region, amount)` made through `c` with the rows `values` (each
/// `(id, region, amount)`), and `c` told of it.
#[allow(dead_code)]
pub async fn orders(c: &Coordinator, values: impl Iterator<Item = String>) {
    c.sql("CREATE TABLE orders (id BIGINT NOT NULL, region INT NOT NULL, amount DECIMAL(10, 2))")
        .await
        .unwrap();
    let values: Vec<String> = values.collect();
    exec(c, &format!("INSERT INTO orders VALUES {}", values.join(", "))).await;
    c.refresh().await.unwrap();
}
