//! `index_page`: index nodes (`Node::new`, its search, and the writer's insert, split and
//! remove on a checked node) on arbitrary bytes, through `nvpage::fuzzing`.

use nvpage::{Error, fuzzing};

use super::Input;

/// Where the index page header keeps what the body compares the decoder's answers with
/// (engine/src/index/node.rs).
const TYPE: usize = 16;
const LEVEL: usize = 17;
const COUNT: usize = 18;
const FREE_END: usize = 20;
const INDEX_ID: usize = 24;
/// What the tree's leaves hold: 0 row ids, 1 sized values (a length, then the value).
const LEAF_VALUES: usize = 29;
/// A leaf's flags; bit 0 (`MAY_SPILL`): the leaf has held a spilled entry.
const FLAGS: usize = 30;
const MAY_SPILL: u8 = 1;
/// The top bit of a sized value's length: the value is a spilled row's chain reference.
const SPILLED: usize = 0x8000;
const PREV: usize = 32;
const NEXT: usize = 40;
const SLOTS: usize = 64;
/// A slot's bytes: its entry's offset, its key's head.
const SLOT: usize = 6;
/// A row id's bytes (a leaf's values), a child page's (an inner node's).
const ROW_ID_LEN: usize = 10;
const CHILD_LEN: usize = 8;

fn le(p: &[u8], at: usize, n: usize) -> u64 {
    p[at..at + n].iter().rev().fold(0, |acc, &b| acc << 8 | u64::from(b))
}

/// `part`'s offset in `page`, if it is a sub-slice of it.
fn offset_in(page: &[u8], part: &[u8]) -> Option<usize> {
    let (start, at) = (page.as_ptr() as usize, part.as_ptr() as usize);
    (at >= start && at + part.len() <= start + page.len()).then(|| at - start)
}

/// A node's entries: key, value, and whether the value is marked a spilled row's reference.
type Entries = Vec<(Vec<u8>, Vec<u8>, bool)>;

/// Whether `page`'s flags announce its spilled entries, if it has any (as `check` holds every
/// leaf of a clustered table to).
fn spills_announced(page: &[u8], entries: &Entries) -> bool {
    page[FLAGS] & MAY_SPILL != 0 || entries.iter().all(|e| !e.2)
}

/// Checks `page` as a node and holds the answer to what the decoder promises; the entries, if
/// it checked.
fn decode(page: &[u8], index_id: u32, id: u64) -> Option<(u8, Entries)> {
    match fuzzing::index_node(page, index_id, id) {
        Ok((level, prev, next, entries)) => {
            assert_eq!(page[TYPE], b'X', "a node that is not an index page");
            assert_eq!(le(page, INDEX_ID, 4), u64::from(index_id), "another index's node");
            assert_eq!(level, page[LEVEL]);
            assert_eq!((prev, next), (le(page, PREV, 8), le(page, NEXT, 8)));
            assert_eq!(entries.len() as u64, le(page, COUNT, 2));
            let free_end = le(page, FREE_END, 4) as usize;
            assert!(SLOTS + SLOT * entries.len() <= free_end && free_end <= page.len());
            assert!(page[LEAF_VALUES] <= 1, "leaf values of an unknown kind");
            let sized = page[LEAF_VALUES] == 1 && level == 0;
            let mut used = 0;
            let mut owned = Vec::with_capacity(entries.len());
            for (i, (key, value)) in entries.iter().enumerate() {
                let k = offset_in(page, key).expect("a key inside the page");
                let v = offset_in(page, value).expect("a value inside the page");
                assert!(k >= free_end + 2, "entry {i}'s key below the entry area");
                assert_eq!(le(page, k - 2, 2) as usize, key.len(), "entry {i}'s key length");
                // A sized value's length keeps its top bit for the spilled mark.
                let (at, len, spilled) = if sized {
                    let len = le(page, k + key.len(), 2) as usize;
                    (k + key.len() + 2, len & !SPILLED, len & SPILLED != 0)
                } else {
                    (k + key.len(), if level == 0 { ROW_ID_LEN } else { CHILD_LEN }, false)
                };
                assert_eq!((v, value.len()), (at, len), "entry {i}'s value");
                used += 2 + key.len() + usize::from(sized) * 2 + len;
                owned.push((key.to_vec(), value.to_vec(), spilled));
            }
            assert!(
                used <= page.len() - free_end,
                "entries of {used} bytes past free end {free_end}"
            );
            Some((level, owned))
        }
        Err(e) => {
            assert!(
                matches!(e, Error::CorruptPage { page, .. } if page == id),
                "not a CorruptPage error naming page {id}: {e:?}"
            );
            let _ = e.to_string();
            None
        }
    }
}

/// A search answers as a binary search must, and exactly so where keys ascend and the key heads
/// are their keys'.
fn search(page: &[u8], index_id: u32, id: u64, entries: &Entries, key: &[u8]) {
    let (found, child, free) =
        fuzzing::index_search(page, index_id, id, key).expect("a checked node searches");
    let n = entries.len();
    let length_fields = if page[LEAF_VALUES] == 1 && page[LEVEL] == 0 { 2 } else { 0 };
    let used: usize = entries.iter().map(|(k, v, _)| 2 + k.len() + length_fields + v.len()).sum();
    assert_eq!(free, page.len() - SLOTS - SLOT * n - used, "free space");
    match found {
        Ok(i) => assert!(i < n && entries[i].0 == key, "found {i} of {n}"),
        Err(i) => assert!(i <= n, "position {i} of {n}"),
    }
    assert!(child < n.max(1), "child {child} of {n}");
    let heads = fuzzing::index_heads_sound(page, index_id, id).expect("a checked node");
    if heads && entries.windows(2).all(|w| w[0].0 < w[1].0) {
        let at = entries.partition_point(|(k, ..)| k.as_slice() < key);
        let want = if entries.get(at).is_some_and(|(k, ..)| k == key) { Ok(at) } else { Err(at) };
        assert_eq!(found, want, "a search in an ordered node");
        assert_eq!(child, want.unwrap_or_else(|i| i.saturating_sub(1)), "child_for");
    }
}

/// The writer's edits keep a checked node checked and lose, add, reorder or unmark nothing
/// (a spilled entry stays marked wherever it goes); a leaf whose flags announced its spilled
/// entries still does, and so does a split's right half. `spilled` asks for the entry added
/// to be marked spilled, which only a leaf of sized values takes.
fn edit(
    page: &[u8],
    index_id: u32,
    id: u64,
    entries: &Entries,
    key: &[u8],
    remove: bool,
    spilled: bool,
) {
    let sized_leaf = (page[LEAF_VALUES], page[LEVEL]) == (1, 0);
    let value = match (page[LEAF_VALUES], page[LEVEL]) {
        // A sized value as long as the key says (none included).
        (1, 0) => vec![0xAB; key.len() % 64],
        (_, 0) => vec![0xAB; ROW_ID_LEN],
        _ => vec![0xAB; CHILD_LEN],
    };
    let announced = spills_announced(page, entries);
    // The writer keeps a node's prefix and heads its keys'.
    let sound = fuzzing::index_heads_sound(page, index_id, id).expect("a checked node");
    let still_sound = |p: &[u8], id: u64, what: &str| {
        if sound {
            assert!(fuzzing::index_heads_sound(p, index_id, id).expect("checked"), "{what}");
        }
    };
    let mut left = page.to_vec();
    let mut want = entries.clone();
    if remove && !entries.is_empty() {
        let pos = usize::from(key.first().copied().unwrap_or(0)) % entries.len();
        fuzzing::index_remove(&mut left, index_id, id, pos).expect("remove from a checked node");
        want.remove(pos);
        let (_, got) = decode(&left, index_id, id).expect("a node checks after a removal");
        assert_eq!(got, want, "a removal");
        still_sound(&left, id, "heads after a removal");
    }
    // Where the insert goes: where a search of the node puts it (in a disordered node, not
    // necessarily between a smaller and a larger key).
    let pos = match fuzzing::index_search(&left, index_id, id, key) {
        Ok((Err(i), ..)) => Some(i),
        _ => None,
    };
    let mut right = vec![0u8; page.len()];
    match fuzzing::index_insert(&mut left, index_id, id, key, &value, spilled, &mut right) {
        Ok(_) if spilled && !sized_leaf => panic!("a spilled entry outside a leaf of sized values"),
        Ok(split) => {
            let pos = pos.expect("an insert of a key the node holds");
            let (_, mut all) = decode(&left, index_id, id).expect("a node checks after an insert");
            if let Some(mid) = split {
                // The entry went left if its position is within the entries kept there.
                assert_eq!(all.len(), mid + usize::from(pos <= mid), "the split's left half");
                let right_id = id.wrapping_add(1);
                let (level, r) =
                    decode(&right, index_id, right_id).expect("a split's right half checks");
                assert_eq!(level, page[LEVEL], "a split's right half at the node's level");
                assert!(!r.is_empty() && mid > 0, "a split leaves entries in both halves");
                still_sound(&right, right_id, "heads of a split's right half");
                assert!(spills_announced(&right, &r), "a split's right half hides a spilled entry");
                all.extend(r);
            }
            still_sound(&left, id, "heads after an insert");
            // The left half holds the new entry unless the split put it right.
            if announced || (spilled && split.is_none_or(|mid| pos <= mid)) {
                let (_, kept) = decode(&left, index_id, id).expect("checked above");
                assert!(spills_announced(&left, &kept), "an insert hides a spilled entry");
            }
            want.insert(pos, (key.to_vec(), value, spilled));
            assert_eq!(all, want, "an insert lost, changed, reordered or unmarked entries");
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

/// Target `index_page`. Input: flags u8 (bits 0-1: page size 4, 8, 16 or 64 KiB; bit 2: use
/// the page's own index id; bit 3: edit it — insert the key, after removing an entry if bit 4
/// is set, marked a spilled row's reference if bit 5 is), index id u32, page id u64, key length
/// u8, the key, then the page (zero-padded or cut to the page size).
///
/// Properties: no panic; a node that checks is an index page of that index whose level,
/// siblings and entry count are its header's, whose entries each lie (key length, key, value of
/// its level's length, or a sized leaf value's length and value) between `free end` and the end
/// of the page, adding up to no more than that area (a sized value's length without its
/// spilled mark); a node that does not check is a `CorruptPage` error naming the page. A search
/// lands inside the node, and where keys ascend and heads are their keys' (not promised by the
/// decoder: `check` verifies both) it is exact. An insert or removal leaves a node that checks, with every other entry
/// kept in order and as marked; a split's halves both check and hold them all; a node whose
/// prefix and heads were sound keeps them sound through every edit, and a leaf whose flags
/// announced its spilled entries still does (a split's right half always). A spilled entry is
/// added only to a leaf of sized values.
pub fn index_page(data: &[u8]) {
    let mut input = Input::new(data);
    let flags = input.u8();
    let size = [4096, 8192, 16384, 65536][usize::from(flags & 3)];
    let mut index_id = input.u32();
    let id = input.u64();
    let key_len = usize::from(input.u8());
    let key: Vec<u8> = (0..key_len).map(|_| input.u8()).collect();
    let mut page = input.rest().to_vec();
    page.resize(size, 0);
    if flags & 4 == 4 {
        index_id = le(&page, INDEX_ID, 4) as u32;
    }
    let Some((_, entries)) = decode(&page, index_id, id) else { return };
    search(&page, index_id, id, &entries, &key);
    if let Some((k, ..)) = entries.first() {
        search(&page, index_id, id, &entries, k);
    }
    if flags & 8 == 8 {
        edit(&page, index_id, id, &entries, &key, flags & 16 == 16, flags & 32 == 32);
    }
}
