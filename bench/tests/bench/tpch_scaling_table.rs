//! Goal: `--scaling` runs the matrix at each scale factor in turn, writes each one's files apart
//! (`-sf<SF>` before the extension; the detail beside the JSON), and ends with the scaling
//! table: per scale factor and configuration the data's size, the load time and the query time,
//! each also per GiB.

use std::process::Command;

#[test]
fn each_scale_factor_runs_and_the_table_lines_them_up() {
    let (medium, dir) = if std::path::Path::new("/dev/shm").is_dir() {
        ("tmpfs", "/dev/shm".to_string())
    } else {
        ("disk", std::env::temp_dir().display().to_string())
    };
    let out_dir = tempfile::tempdir().unwrap();
    let json = out_dir.path().join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_nvpage-bench"))
        .args(["tpch", "--scaling", "0.001,0.002", "--layers", "se2", "--media", medium])
        .args(["--pool-fraction", "1", "--runs", "1", "--queries", "1,6", "--warm", "--quiet"])
        .args(["--dir-tmpfs", &dir, "--dir-disk", &dir, "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("== SF 0.001 ==") && stdout.contains("== SF 0.002 =="), "{stdout}");
    for sf in ["0.001", "0.002"] {
        let path = out_dir.path().join(format!("report-sf{sf}.json"));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["config"]["sf"].as_f64(), Some(sf.parse().unwrap()));
        // The detail of each scale factor beside the JSON.
        assert!(out_dir.path().join(format!("tpch-detail-sf{sf}.txt")).is_file(), "SF {sf}");
    }
    let table = &stdout[stdout.find("Scaling:").expect("the scaling table")..];
    assert!(table.contains("load s / GiB") && table.contains("query ms / GiB"), "{table}");
    let rows: Vec<&str> = table.lines().filter(|l| l.contains("se2")).collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert!(rows[0].contains("0.001") && rows[1].contains("0.002"), "{table}");
}
