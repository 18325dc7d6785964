//! Goal: two appenders that share one CPU do not take turns on it for every append. Appends
//! complete in order, so an appender whose predecessor lost the CPU mid-copy must wait for it;
//! if it then also needed a turn of its own to be published, the two would hand the CPU back
//! and forth once per append. Instead the waiter leaves its append for the running thread to
//! publish, so waits happen about once per scheduler time slice. Both threads are pinned to
//! one CPU; the log counts the appends that waited past spinning (`Log::order_waits`). Every
//! record is still found once, in each thread's order, after a reopen.

#![cfg(target_os = "linux")]
#![allow(unsafe_code)]

use crate::common;

use common::{create, media, open};
use nvpage_wal::Framing;
use nvpage_wal::layout::{DATA_OFFSET, record_size};

/// The first CPU this process may run on, if the set can be read.
fn one_allowed_cpu() -> Option<usize> {
    // SAFETY: `set` is a plain bit set the call fills; its size is passed with it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above; pid 0 is the calling thread.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    if rc != 0 {
        return None;
    }
    // SAFETY: CPU_ISSET reads the set within its size (`c` below CPU_SETSIZE).
    (0..libc::CPU_SETSIZE as usize).find(|&c| unsafe { libc::CPU_ISSET(c, &set) })
}

/// Pins the calling thread to `cpu`; false where the system refuses (a sandbox, say).
fn pin_to(cpu: usize) -> bool {
    // SAFETY: as in `one_allowed_cpu`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below CPU_SETSIZE (it came from a set of that size).
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: as in `one_allowed_cpu`.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0 }
}

#[test]
fn two_appenders_on_one_cpu_wait_rarely_and_lose_nothing() {
    const PER_THREAD: u64 = 10_000;
    const LEN: usize = 1024;
    let Some(cpu) =
        one_allowed_cpu().filter(|&c| std::thread::spawn(move || pin_to(c)).join().unwrap())
    else {
        eprintln!("threads cannot be pinned here: nothing to test");
        return;
    };
    for m in media() {
        let p = m.path("shared-core.log");
        let size = 2 * PER_THREAD * record_size(LEN as u64) + (1 << 20);
        let log = create(&p, DATA_OFFSET as u64 + size, Framing::Records, m.persistence);
        log.prefault();
        std::thread::scope(|s| {
            for t in 0..2u64 {
                let log = &log;
                s.spawn(move || {
                    assert!(pin_to(cpu), "pinned once, refused now");
                    let mut b = vec![t as u8; LEN];
                    for seq in 0..PER_THREAD {
                        b[..8].copy_from_slice(&seq.to_le_bytes());
                        log.append_buffered(&b).unwrap();
                    }
                });
            }
        });
        // Taking turns would be a wait for a good part of the appends (9-22 thousand of 40
        // thousand records of 200 B-4 KiB, before the waiter left its append to be published); a
        // wait per time slice is a few here. A tenth of the appends leaves room for a busy machine's shorter
        // slices. In `msync` mode on a disk a copy may block in the kernel (a `pwrite` into a
        // page under writeback), and the thread after it waits with the CPU idle: no turns to
        // count there.
        let waits = log.order_waits();
        if m.name == "emulated-nvm" {
            assert!(waits < 2 * PER_THREAD / 10, "{}: {waits} appends waited", m.name);
        }
        log.sync().unwrap();
        drop(log);
        let log = open(&p, m.persistence).unwrap();
        let mut next = [0u64; 2];
        for r in log.records().unwrap() {
            let r = r.unwrap();
            let t = r.payload[LEN - 1] as usize;
            let seq = u64::from_le_bytes(r.payload[..8].try_into().unwrap());
            assert_eq!(seq, next[t], "{}: thread {t} out of order", m.name);
            assert!(r.payload[8..].iter().all(|&x| x as usize == t), "{}: damaged", m.name);
            next[t] += 1;
        }
        assert_eq!(next, [PER_THREAD; 2], "{}: every record once", m.name);
        assert_eq!(log.record_count(), 2 * PER_THREAD);
    }
}
