//! Goal: the 22 queries' SQL through a coordinator and two, then three, nvpage workers on
//! 127.0.0.1 — the tables loaded through the coordinator, split as the cluster file says —
//! give the same answers as the hand-written plans over one database.
#![cfg(feature = "cluster")]

use std::sync::Arc;

use indicatif::ProgressBar;
use nvpage::{Database, Layer};
use nvpage_bench::tpch::cluster::{cluster_file, load, run};
use nvpage_bench::tpch::load::load_all;
use nvpage_bench::tpch::postgres::compare_text;
use nvpage_bench::tpch::runner::builder;
use nvpage_bench::tpch::{Medium, Query};
use nvpage_cluster::{Cluster, Coordinator};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

const SF: f64 = nvpage_bench::tpch::answers::REFERENCE_TEST_SF;
const TOKEN: &str = "tpch-test-token";

#[test]
fn the_22_queries_through_two_and_three_workers_answer_as_one_database() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("one");
    let db = Arc::new(builder(Layer::best_compiled(), Medium::Disk).open(&dir).unwrap());
    load_all(&db, SF, false, &ProgressBar::hidden()).unwrap();
    let want: Vec<_> = {
        let rx = db.begin_read().unwrap();
        Query::ALL.iter().map(|&q| (q, q.run(&rx, 2).unwrap())).collect()
    };
    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(4).enable_all().build().unwrap();
    for n in [2, 3] {
        rt.block_on(async {
            let mut stops = Vec::new();
            let mut tasks = Vec::new();
            let mut addresses = Vec::new();
            for i in 0..n {
                let wdb = Database::open(tmp.path().join(format!("w{n}-{i}"))).unwrap();
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                addresses.push(listener.local_addr().unwrap().to_string());
                let (tx, rx) = oneshot::channel::<()>();
                let stop = async move {
                    let _ = rx.await;
                };
                tasks.push(tokio::spawn(nvpage_cluster::worker::serve(wdb, listener, TOKEN, stop)));
                stops.push(tx);
            }
            let cluster = Cluster::parse(&cluster_file(TOKEN, &addresses), None).unwrap();
            let c = Coordinator::connect(cluster).await.unwrap();
            load(&c, db.clone()).await.unwrap();
            for (q, expect) in &want {
                let got = run(&c, *q, SF).await.unwrap();
                if let Some(diff) = compare_text(expect, &got, "the cluster's") {
                    panic!("{q} through {n} workers: {diff}");
                }
            }
            drop(c);
            for s in stops {
                let _ = s.send(());
            }
            for t in tasks {
                t.await.unwrap().unwrap();
            }
        });
    }
}
