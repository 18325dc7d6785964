//! Goal: the three layers are interchangeable. A property test drives random sequences of grow,
//! write, read, in-place read, sync, header write-back and reopen (each reopen moving every file
//! to another layer) against one file per layer and a model (a map of page contents); every
//! result and every byte read agrees with the model, and at the end the three files, created with
//! the same UUID, are byte-identical and hold exactly the model's pages.

#![forbid(unsafe_code)]

use crate::common;

use std::collections::HashMap;

use common::{Medium, PAGE_SIZES, frame, read, read_in_place, sealed};
use nvpage_storage::{FileHeader, FileLayer, Layer, OpenOptions, PageId, PageSize, StorageError};
use proptest::prelude::*;
use uuid::Uuid;

/// Page ids the ops pick from; ids at or past the page count must be refused.
const MAX_ID: u64 = 24;

#[derive(Clone, Debug)]
enum Op {
    Grow(u64),
    Write { id: u64, seed: u64 },
    Read(u64),
    WithPage(u64),
    Sync,
    WriteHeader,
    Reopen,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0..6u64).prop_map(Op::Grow),
        5 => (1..MAX_ID, any::<u64>()).prop_map(|(id, seed)| Op::Write { id, seed }),
        3 => (0..MAX_ID).prop_map(Op::Read),
        2 => (0..MAX_ID).prop_map(Op::WithPage),
        1 => Just(Op::Sync),
        2 => Just(Op::WriteHeader),
        1 => Just(Op::Reopen),
    ]
}

/// What the file should hold: page contents by id (absent: zeros), the page count in memory, and
/// the page count in the header page.
struct Model {
    ps: PageSize,
    uuid: Uuid,
    pages: HashMap<u64, Vec<u8>>,
    count: u64,
    header_count: u64,
}

impl Model {
    fn new(ps: PageSize, uuid: Uuid) -> Self {
        let mut m = Self { ps, uuid, pages: HashMap::new(), count: 1, header_count: 1 };
        m.write_header();
        m
    }

    fn write_header(&mut self) {
        let mut page = vec![0u8; self.ps.bytes()];
        FileHeader { page_size: self.ps, page_count: self.count, uuid: self.uuid }
            .encode_into(&mut page);
        self.pages.insert(0, page);
        self.header_count = self.count;
    }

    fn page(&self, id: u64) -> Vec<u8> {
        self.pages.get(&id).cloned().unwrap_or_else(|| vec![0u8; self.ps.bytes()])
    }
}

/// The layer lane `lane` uses after `reopens` reopens: every lane visits every layer.
fn layer_of(lane: usize, reopens: usize) -> Layer {
    Layer::ALL[(lane + reopens) % Layer::ALL.len()]
}

fn out_of_range(r: Result<(), StorageError>, id: u64, count: u64) -> bool {
    matches!(r, Err(StorageError::PageOutOfRange { page, page_count })
        if page == PageId(id) && page_count == count)
}

fn check_read(
    lanes: &[Box<dyn FileLayer>],
    model: &Model,
    id: u64,
    in_place: bool,
) -> Result<(), TestCaseError> {
    for l in lanes {
        let got = if in_place { read_in_place(&**l, PageId(id)) } else { read(&**l, PageId(id)) };
        if id < model.count {
            let got = got.map_err(|e| TestCaseError::fail(format!("{}: {e}", l.layer())))?;
            prop_assert!(got == model.page(id), "{} page {id} differs from the model", l.layer());
        } else {
            prop_assert!(
                out_of_range(got.map(drop), id, model.count),
                "{} page {id} should be out of range",
                l.layer()
            );
        }
    }
    Ok(())
}

fn run(medium: &Medium, ps: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let uuid = Uuid::new_v4();
    let psz = PageSize::new(ps as u64).unwrap();
    let paths: Vec<_> = (0..3).map(|i| medium.path(&format!("lane{i}.db"))).collect();
    let mut lanes: Vec<Box<dyn FileLayer>> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            OpenOptions { page_size: psz, uuid: Some(uuid), ..OpenOptions::new(layer_of(i, 0)) }
                .create(p)
                .expect("create")
        })
        .collect();
    let mut model = Model::new(psz, uuid);
    let mut reopens = 0;
    for op in ops {
        match *op {
            Op::Grow(by) => {
                let new = model.count + by;
                for l in &lanes {
                    l.grow(new).map_err(|e| TestCaseError::fail(format!("{}: {e}", l.layer())))?;
                    prop_assert_eq!(l.file().page_count(), new);
                }
                model.count = new;
            }
            Op::Write { id, seed } => {
                let f = frame(ps, seed);
                for l in &lanes {
                    let r = l.write_page(PageId(id), &mut f.clone());
                    if id < model.count {
                        prop_assert!(r.is_ok(), "{} write {id}: {r:?}", l.layer());
                    } else {
                        prop_assert!(out_of_range(r, id, model.count), "{} write {id}", l.layer());
                    }
                }
                if id < model.count {
                    model.pages.insert(id, sealed(&f, PageId(id)));
                }
            }
            Op::Read(id) => check_read(&lanes, &model, id, false)?,
            Op::WithPage(id) => check_read(&lanes, &model, id, true)?,
            Op::Sync => {
                for l in &lanes {
                    l.sync().map_err(|e| TestCaseError::fail(format!("{}: {e}", l.layer())))?;
                }
            }
            Op::WriteHeader => {
                for l in &lanes {
                    l.write_header().map_err(|e| TestCaseError::fail(e.to_string()))?;
                }
                model.write_header();
            }
            Op::Reopen => {
                lanes.clear();
                reopens += 1;
                for (i, p) in paths.iter().enumerate() {
                    let l = OpenOptions::new(layer_of(i, reopens)).open(p).expect("reopen");
                    prop_assert_eq!(l.file().page_count(), model.header_count);
                    prop_assert_eq!(l.file().uuid(), uuid);
                    lanes.push(l);
                }
                model.count = model.header_count;
            }
        }
    }
    drop(lanes);
    let files: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).expect("read file")).collect();
    prop_assert!(files[0] == files[1], "pread-started and se1-started files differ");
    prop_assert!(files[0] == files[2], "pread-started and se2-started files differ");
    prop_assert_eq!(files[0].len() % ps, 0);
    for (id, page) in files[0].chunks(ps).enumerate() {
        prop_assert!(page == model.page(id as u64).as_slice(), "file page {id} differs from model");
    }
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn layers_agree_on_disk(
        ps in prop::sample::select(PAGE_SIZES.to_vec()),
        ops in prop::collection::vec(op(), 1..64),
    ) {
        run(&common::disk(), ps, &ops)?;
    }

    #[test]
    fn layers_agree_on_tmpfs(
        ps in prop::sample::select(PAGE_SIZES.to_vec()),
        ops in prop::collection::vec(op(), 1..64),
    ) {
        if let Some(m) = common::shm() {
            run(&m, ps, &ops)?;
        }
    }
}
