//! Goal: the simulator's fault plan and counters behave as documented on real files. Every
//! `pread`, `pwrite`, growth and persist is counted; a `Fault` fails exactly the `(after + 1)`-th
//! matching call, once or (`FaultMode::Forever`) for good, with the errno asked for (`ENOSPC`
//! becomes `NoSpace`); `op: None` counts calls of every kind; several faults count independently;
//! `clear_faults` and a crash disarm them, and a crash resets the counters.

#![forbid(unsafe_code)]

use crate::common;

use common::{disk, frame, opts, read};
use nvpage_storage::sim::{Fault, FaultMode, OpCounts, Sim, Tear};
use nvpage_storage::{FileOptions, Layer, PageId, RawFile, SimOp, StorageError};

fn eio(r: Result<(), StorageError>) -> bool {
    matches!(r, Err(StorageError::Io { source, .. }) if source.raw_os_error() == Some(libc::EIO))
}

fn counts(reads: u64, writes: u64, grows: u64, persists: u64, injected: u64) -> OpCounts {
    OpCounts { reads, writes, grows, persists, injected_failures: injected }
}

#[test]
fn every_kind_of_call_is_counted() {
    let m = disk();
    let sim = Sim::attach(m.dir.path(), 1);
    let path = m.path("raw");
    let f = RawFile::create(&path, &FileOptions::default()).unwrap();
    assert_eq!(sim.counts(), OpCounts::default());
    // Growth is one grow and the fsync that makes it durable.
    f.grow_to(8192).unwrap();
    assert_eq!(sim.counts(), counts(0, 0, 1, 1, 0));
    f.write_at(&[1; 100], 0).unwrap();
    f.write_at(&[2; 100], 4096).unwrap();
    f.read_at(&mut [0; 100], 0).unwrap();
    f.sync().unwrap();
    f.persist_range(0, 100).unwrap();
    assert_eq!(sim.counts(), counts(1, 2, 1, 3, 0));
    // Growth to a length the file already has does nothing and counts nothing.
    f.grow_to(4096).unwrap();
    assert_eq!(sim.counts(), counts(1, 2, 1, 3, 0));
}

#[test]
fn layers_are_counted_by_what_they_do() {
    let m = disk();
    let sim = Sim::attach(m.dir.path(), 2);
    // Creating a page file: grow (with its fsync), write the header page, sync.
    let p = opts(Layer::Pread, 4096).create(&m.path("p.db")).unwrap();
    assert_eq!(sim.counts(), counts(0, 1, 1, 2, 0));
    p.grow(2).unwrap();
    p.write_page(PageId(1), &mut frame(4096, 1)).unwrap();
    read(&*p, PageId(1)).unwrap();
    p.sync().unwrap();
    // The growth past the header page allocates ahead: one more grow and its fsync.
    assert_eq!(sim.counts(), counts(1, 2, 2, 4, 0), "pread reads and writes are system calls");
    // The mapped layers read through the mapping: no pread after create. On a disk's file
    // system (msync mode) a write-back is one pwrite: a store through the mapping would make
    // the file system dirty its whole folio (storage/src/layer/mapped.rs).
    let s = opts(Layer::Se2, 4096).create(&m.path("s.db")).unwrap();
    let before = sim.counts();
    s.grow(2).unwrap();
    s.write_page(PageId(1), &mut frame(4096, 1)).unwrap();
    read(&*s, PageId(1)).unwrap();
    s.sync().unwrap();
    let after = sim.counts();
    assert_eq!((after.reads, after.writes), (before.reads, before.writes + 1));
    assert_eq!((after.grows, after.persists), (before.grows + 1, before.persists + 2));
}

#[test]
fn a_once_fault_fails_exactly_one_call() {
    let m = disk();
    let sim = Sim::attach(m.dir.path(), 3);
    let f = RawFile::create(&m.path("raw"), &FileOptions::default()).unwrap();
    f.grow_to(4096).unwrap();
    sim.fail(Fault::once(Some(SimOp::Write), 2));
    assert!(f.write_at(&[1], 0).is_ok());
    assert!(f.write_at(&[1], 1).is_ok());
    assert!(eio(f.write_at(&[1], 2)), "the third write fails");
    assert!(f.write_at(&[1], 3).is_ok(), "and only that one");
    // Other kinds are not counted by the fault, and a failed write does not poison the file.
    f.read_at(&mut [0; 4], 0).unwrap();
    f.sync().unwrap();
    assert!(!f.is_poisoned());
    assert_eq!(sim.counts().injected_failures, 1);
    assert_eq!(
        std::fs::read(m.path("raw")).unwrap()[..4],
        [1, 1, 0, 1],
        "the failed write wrote nothing"
    );
}

#[test]
fn a_forever_fault_fails_every_call_from_then_on() {
    let m = disk();
    let sim = Sim::attach(m.dir.path(), 4);
    let f = RawFile::create(&m.path("raw"), &FileOptions::default()).unwrap();
    f.grow_to(4096).unwrap();
    sim.fail(Fault { op: Some(SimOp::Read), after: 1, mode: FaultMode::Forever, errno: libc::EIO });
    let mut buf = [0u8; 8];
    assert!(f.read_at(&mut buf, 0).is_ok());
    for _ in 0..5 {
        assert!(eio(f.read_at(&mut buf, 0)));
    }
    assert!(f.write_at(&[7], 0).is_ok(), "writes are another kind");
    assert_eq!(sim.counts().injected_failures, 5);
    sim.clear_faults();
    assert!(f.read_at(&mut buf, 0).is_ok(), "clear_faults disarms");
    assert_eq!(buf[0], 7);
}

#[test]
fn a_fault_without_a_kind_counts_every_call() {
    let m = disk();
    let sim = Sim::attach(m.dir.path(), 5);
    let f = RawFile::create(&m.path("raw"), &FileOptions::default()).unwrap();
    f.grow_to(4096).unwrap();
    sim.fail(Fault::once(None, 3));
    assert!(f.write_at(&[1], 0).is_ok());
    assert!(f.read_at(&mut [0], 0).is_ok());
    assert!(f.sync().is_ok());
    // The fourth call of any kind: a persist, which poisons the file.
    assert!(eio(f.persist_range(0, 1)));
    assert!(f.is_poisoned());
    assert!(matches!(f.write_at(&[1], 0), Err(StorageError::Poisoned { .. })));
}

#[test]
fn the_errno_is_the_one_asked_for() {
    let m = disk();
    let sim = Sim::attach(m.dir.path(), 6);
    let path = m.path("raw");
    let f = RawFile::create(&path, &FileOptions::default()).unwrap();
    f.grow_to(4096).unwrap();
    sim.fail(Fault {
        op: Some(SimOp::Write),
        after: 0,
        mode: FaultMode::Once,
        errno: libc::ENOSPC,
    });
    let r = f.write_at(&[1], 0);
    assert!(matches!(&r, Err(StorageError::NoSpace { path: p }) if *p == path), "{r:?}");
    sim.fail(Fault {
        op: Some(SimOp::Read),
        after: 0,
        mode: FaultMode::Once,
        errno: libc::EBADMSG,
    });
    match f.read_at(&mut [0], 0) {
        Err(StorageError::Io { op, source, .. }) => {
            assert_eq!(op, "pread");
            assert_eq!(source.raw_os_error(), Some(libc::EBADMSG));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn faults_count_independently() {
    let m = disk();
    let sim = Sim::attach(m.dir.path(), 7);
    let f = RawFile::create(&m.path("raw"), &FileOptions::default()).unwrap();
    f.grow_to(4096).unwrap();
    sim.fail(Fault::once(Some(SimOp::Write), 1));
    sim.fail(Fault::once(Some(SimOp::Read), 0));
    assert!(eio(f.read_at(&mut [0], 0)));
    assert!(f.write_at(&[1], 0).is_ok());
    assert!(eio(f.write_at(&[1], 0)));
    assert!(f.read_at(&mut [0], 0).is_ok());
    assert!(f.write_at(&[1], 0).is_ok());
    assert_eq!(sim.counts().injected_failures, 2);
}

#[test]
fn a_crash_disarms_faults_and_resets_counts() {
    let m = disk();
    let sim = Sim::attach(m.dir.path(), 8);
    let path = m.path("raw");
    let f = RawFile::create(&path, &FileOptions::default()).unwrap();
    f.grow_to(4096).unwrap();
    sim.fail(Fault { op: None, after: 0, mode: FaultMode::Forever, errno: libc::EIO });
    assert!(f.write_at(&[1], 0).is_err());
    drop(f);
    sim.crash(Tear::Sector);
    assert_eq!(sim.counts(), OpCounts::default());
    let f = RawFile::open(&path, &FileOptions::default()).unwrap();
    f.write_at(&[1], 0).unwrap();
    f.sync().unwrap();
    assert_eq!(sim.counts(), counts(0, 1, 0, 1, 0));
}

#[test]
fn page_layer_reads_fail_typed_not_as_corruption() {
    // A failed pread is an I/O error, never mistaken for a damaged page, and the page reads fine
    // once the fault has passed.
    let m = disk();
    let sim = Sim::attach(m.dir.path(), 9);
    let path = m.path("p.db");
    let written = common::fill(&*opts(Layer::Pread, 4096).create(&path).unwrap(), 3, 1);
    let l = nvpage_storage::OpenOptions::new(Layer::Pread).open(&path).unwrap();
    sim.fail(Fault::once(Some(SimOp::Read), 0));
    assert!(eio(read(&*l, PageId(2)).map(drop)));
    assert_eq!(read(&*l, PageId(2)).unwrap(), written[2]);
}
