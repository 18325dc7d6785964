//! The lock every [`RawFile`](crate::RawFile) takes at open, and who holds it when it is refused.
//!
//! A writable open takes an exclusive `flock`, a read-only open a shared one: any number of
//! read-only handles (in this process or others) may hold a file at once while no writer does,
//! and a writer holds it alone. `flock` locks belong to the open file description, so two
//! handles in one process conflict exactly as two processes do. A refused lock is
//! [`StorageError::AlreadyOpen`], naming the holders as `/proc/locks` shows them.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::{Result, StorageError};

/// Who holds a file's lock, as far as the system shows (`/proc/locks`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Holders {
    /// A handle in this process holds it.
    pub this_process: bool,
    /// Other processes that hold it, by id (none where the system shows none).
    pub pids: Vec<u32>,
    /// Whether the lock held is a writer's (`Some(true)`), readers' (`Some(false)`), or not
    /// shown (`None`).
    pub writer: Option<bool>,
}

/// Takes the open's lock on `file`: shared for a read-only open, exclusive otherwise, without
/// waiting. A conflicting holder is [`StorageError::AlreadyOpen`].
pub(crate) fn lock(file: &File, path: &Path, read_only: bool) -> Result<()> {
    let op = if read_only { libc::LOCK_SH } else { libc::LOCK_EX };
    flock(file, op | libc::LOCK_NB).map_err(|e| match e.raw_os_error() {
        Some(libc::EWOULDBLOCK) => {
            let mut holders = holders(file);
            if read_only {
                // Only an exclusive lock refuses a shared one.
                holders.writer = Some(true);
            }
            StorageError::AlreadyOpen { path: path.into(), writable: !read_only, holders }
        }
        _ => StorageError::io("flock", path, e),
    })
}

/// `flock(2)` with `op` on `file`, again when a signal interrupts it.
pub(crate) fn flock(file: &File, op: libc::c_int) -> io::Result<()> {
    loop {
        // SAFETY: flock only reads its integer arguments.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The holders of `file`'s `flock` that `/proc/locks` shows; none where it cannot be read.
///
/// The kernel lists the locks a buffer at a time, and a lock taken or dropped elsewhere between
/// two reads can shift the listing past a line. So the file is read in as few reads as its size
/// allows, and read again (a few times at most) while it shows no holder of a lock that was just
/// refused.
fn holders(file: &File) -> Holders {
    let Ok(meta) = file.metadata() else { return Holders::default() };
    let id =
        FileId { major: libc::major(meta.dev()), minor: libc::minor(meta.dev()), ino: meta.ino() };
    let mut h = Holders::default();
    for _ in 0..LISTING_READS {
        let Some(text) = proc_locks() else { break };
        h = holders_in(&text, id, std::process::id());
        if h.writer.is_some() {
            break;
        }
    }
    h
}

/// How many times [`holders`] reads `/proc/locks` before it settles for a listing without the
/// file.
const LISTING_READS: usize = 4;

/// `/proc/locks` read whole, into a buffer large enough that most listings take one read.
fn proc_locks() -> Option<String> {
    let mut buf = Vec::with_capacity(1 << 20);
    File::open("/proc/locks").ok()?.read_to_end(&mut buf).ok()?;
    String::from_utf8(buf).ok()
}

/// A file as `/proc/locks` names it: its device's major and minor numbers and its inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileId {
    major: u32,
    minor: u32,
    ino: u64,
}

/// The `FLOCK` holders of `id` in `text`, a `/proc/locks` listing, seen from process `me`.
/// A line reads `1: FLOCK  ADVISORY  WRITE 4242 fe:00:6013116 0 EOF` (id, kind, mode, pid,
/// device `major:minor` in hex and inode in decimal, range); a waiter's line has `->` after the
/// id and holds nothing. A pid of 0 or less (a holder in another pid namespace, or one whose
/// process is gone) names nobody.
fn holders_in(text: &str, id: FileId, me: u32) -> Holders {
    let mut h = Holders::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [_, "FLOCK", _, mode, pid, file, ..] = f.as_slice() else { continue };
        if parse_file_id(file) != Some(id) {
            continue;
        }
        let write = *mode == "WRITE";
        h.writer = Some(h.writer.unwrap_or(false) || write);
        match pid.parse::<i64>().ok().and_then(|p| u32::try_from(p).ok()).filter(|&p| p > 0) {
            Some(p) if p == me => h.this_process = true,
            Some(p) if !h.pids.contains(&p) => h.pids.push(p),
            _ => {}
        }
    }
    h.pids.sort_unstable();
    h
}

fn parse_file_id(s: &str) -> Option<FileId> {
    let mut parts = s.split(':');
    let major = u32::from_str_radix(parts.next()?, 16).ok()?;
    let minor = u32::from_str_radix(parts.next()?, 16).ok()?;
    let ino = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some(FileId { major, minor, ino })
}

/// The message of [`StorageError::AlreadyOpen`]: what holds the file, and what to do.
pub(crate) fn conflict(path: &Path, writable: bool, h: &Holders) -> String {
    let held = match h.writer {
        Some(true) => " for writing",
        Some(false) => " read-only",
        None => "",
    };
    let pids = h.pids.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    let procs = if h.pids.len() == 1 { "process" } else { "processes" };
    let who = match (h.this_process, h.pids.is_empty()) {
        (true, true) => "this process (another handle to it)".to_string(),
        (true, false) => format!("this process and {procs} {pids}"),
        (false, false) => format!("{procs} {pids}"),
        (false, true) => "another process".to_string(),
    };
    let only_here = h.this_process && h.pids.is_empty();
    let advice = match (writable, h.writer) {
        (false, _) if only_here => {
            "read through that handle instead (its read transactions run beside its writer), \
             or drop it first"
        }
        (false, _) => {
            "a read-only open needs no writer: close the database there first (readers in other \
             processes beside a live writer are not offered yet)"
        }
        (true, Some(false)) => "a writable open needs every read-only handle closed first",
        (true, _) if only_here => "use that handle, or drop it first",
        (true, _) => "one writable open at a time: close the database there first",
    };
    format!("{} is already open{held} by {who}; {advice}", path.display())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{FileId, Holders, conflict, holders_in};

    const ID: FileId = FileId { major: 0xfe, minor: 0, ino: 6013116 };

    #[test]
    fn proc_locks_lines_of_the_file_name_its_holders() {
        let text = "\
1: FLOCK  ADVISORY  READ 4242 fe:00:6013116 0 EOF
2: FLOCK  ADVISORY  WRITE 77 fe:00:999 0 EOF
3: POSIX  ADVISORY  WRITE 78 fe:00:6013116 0 EOF
4: FLOCK  ADVISORY  READ 100 fe:00:6013116 0 EOF
5: FLOCK  ADVISORY  READ 4242 fe:00:6013116 0 EOF
5: -> FLOCK  ADVISORY  WRITE 55 fe:00:6013116 0 EOF
6: FLOCK  ADVISORY  READ 0 fe:00:6013116 0 EOF
7: FLOCK  ADVISORY  READ 9 fe:01:6013116 0 EOF
";
        let h = holders_in(text, ID, 100);
        assert_eq!(h, Holders { this_process: true, pids: vec![4242], writer: Some(false) });
        let h = holders_in("1: FLOCK  ADVISORY  WRITE 31 fe:00:6013116 0 EOF\n", ID, 100);
        assert_eq!(h, Holders { this_process: false, pids: vec![31], writer: Some(true) });
        assert_eq!(holders_in("garbage\n\n1: FLOCK\n", ID, 100), Holders::default());
    }

    #[test]
    fn the_message_names_holders_and_says_what_to_do() {
        let p = Path::new("/db/data.nvpage");
        let writer =
            |this_process, pids: Vec<u32>| Holders { this_process, pids, writer: Some(true) };
        assert_eq!(
            conflict(p, false, &writer(false, vec![7])),
            "/db/data.nvpage is already open for writing by process 7; a read-only open needs \
             no writer: close the database there first (readers in other processes beside a \
             live writer are not offered yet)"
        );
        let m = conflict(p, false, &writer(true, vec![]));
        assert!(
            m.contains("for writing by this process (another handle to it); read through"),
            "{m}"
        );
        let readers = Holders { this_process: false, pids: vec![7, 9], writer: Some(false) };
        assert_eq!(
            conflict(p, true, &readers),
            "/db/data.nvpage is already open read-only by processes 7, 9; a writable open needs \
             every read-only handle closed first"
        );
        let m = conflict(p, true, &writer(true, vec![3]));
        assert!(m.contains("for writing by this process and process 3; one writable open"), "{m}");
        let m = conflict(p, true, &Holders::default());
        assert!(m.contains("is already open by another process; one writable open"), "{m}");
    }
}
