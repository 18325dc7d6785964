//! Goal: a record appended from one buffer on the cache-line path (stored line by line, its check
//! computed in the same loop) is byte for byte the record the gathered path writes for the same
//! payload split in two (its check computed first, then copied), at every length around the
//! layout's and the hash's boundaries; and both read back, before and after a reopen.

use crate::common;

use std::io::IoSlice;

use common::{create, media, open, payload, payloads};
use nvpage_wal::Framing;
use nvpage_wal::layout::DATA_OFFSET;

const LENS: [usize; 22] = [
    0, 1, 15, 16, 47, 48, 49, 63, 64, 112, 113, 240, 241, 304, 1024, 1025, 4080, 4096, 4144,
    65_520, 65_536, 65_584,
];

#[test]
fn one_buffer_and_two_buffers_write_the_same_bytes() {
    let size = DATA_OFFSET as u64 + (4 << 20);
    for m in media() {
        let (one_path, two_path) = (m.path("one.log"), m.path("two.log"));
        // Both logs of the same database, fresh: the same generation, so the same checks.
        let one = create(&one_path, size, Framing::Records, m.persistence);
        let two = create(&two_path, size, Framing::Records, m.persistence);
        let written: Vec<Vec<u8>> = LENS.iter().map(|&n| payload(n as u64, n)).collect();
        for p in &written {
            let a = one.append(p).unwrap();
            let (head, tail) = p.split_at(p.len() / 3);
            let b = two.append_vectored(&[IoSlice::new(head), IoSlice::new(tail)]).unwrap();
            assert_eq!(a, b, "{}: len {}", m.name, p.len());
        }
        let end = (DATA_OFFSET as u64 + one.tell()) as usize;
        assert_eq!(payloads(&one), written, "{}", m.name);
        assert_eq!(payloads(&two), written, "{}", m.name);
        drop((one, two));
        let (a, b) = (std::fs::read(&one_path).unwrap(), std::fs::read(&two_path).unwrap());
        assert!(a[DATA_OFFSET..end] == b[DATA_OFFSET..end], "{}: the records differ", m.name);
        for path in [&one_path, &two_path] {
            let log = open(path, m.persistence).unwrap();
            assert_eq!(payloads(&log), written, "{}: after reopening", m.name);
        }
    }
}
