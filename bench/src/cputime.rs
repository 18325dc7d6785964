//! The process's (or one thread's) CPU time, split into user and system time, read from
//! `/proc/self/stat` (`/proc/thread-self/stat`).
//!
//! The bench crate forbids `unsafe`, so `getrusage` is out of reach; `/proc/self/stat` carries the
//! same two counters (fields 14 `utime` and 15 `stime`) in clock ticks of `USER_HZ`, which Linux
//! fixes at 100 for everything it exports in `/proc`. Resolution is therefore 10 ms, and the split
//! between user and system time is sampled per tick by the kernel: a measured interval should last
//! a few hundred milliseconds, and shares are best pooled over several runs. The same parsers
//! read other processes' `/proc/<pid>/stat` (PostgreSQL's backends and postmaster).

use std::io;
use std::time::{Duration, Instant};

use crate::BoxError;

/// Clock ticks per second in `/proc` (the kernel's fixed `USER_HZ`).
pub const USER_HZ: u64 = 100;

/// Cumulative CPU time of the process, in clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Time spent running user code.
    pub user_ticks: u64,
    /// Time spent in the kernel on the process's behalf.
    pub sys_ticks: u64,
}

impl CpuTimes {
    /// The process's CPU time so far.
    pub fn now() -> io::Result<Self> {
        let stat = std::fs::read_to_string("/proc/self/stat")?;
        parse_stat(&stat).ok_or_else(|| io::Error::other("unexpected /proc/self/stat format"))
    }

    /// The calling thread's CPU time so far (`/proc/thread-self/stat`, same fields and
    /// resolution): what one thread spent while others run beside it.
    pub fn thread_now() -> io::Result<Self> {
        let stat = std::fs::read_to_string("/proc/thread-self/stat")?;
        parse_stat(&stat)
            .ok_or_else(|| io::Error::other("unexpected /proc/thread-self/stat format"))
    }

    /// The CPU time spent between `earlier` and `self`.
    pub fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes {
            user_ticks: self.user_ticks.saturating_sub(earlier.user_ticks),
            sys_ticks: self.sys_ticks.saturating_sub(earlier.sys_ticks),
        }
    }

    /// The sum of two CPU times (of two processes, say).
    pub fn plus(self, other: CpuTimes) -> CpuTimes {
        CpuTimes {
            user_ticks: self.user_ticks + other.user_ticks,
            sys_ticks: self.sys_ticks + other.sys_ticks,
        }
    }

    /// User time in milliseconds.
    pub fn user_ms(self) -> f64 {
        ticks_to_ms(self.user_ticks)
    }

    /// System time in milliseconds.
    pub fn sys_ms(self) -> f64 {
        ticks_to_ms(self.sys_ticks)
    }
}

fn ticks_to_ms(ticks: u64) -> f64 {
    ticks as f64 * 1000.0 / USER_HZ as f64
}

/// Runs `f`, returning its result, its wall time and the process's CPU time over the call. The
/// CPU counters are read outside the wall-time window, so reading them costs the interval nothing.
pub fn timed<T, E: Into<BoxError>>(
    f: impl FnOnce() -> Result<T, E>,
) -> Result<(T, Duration, CpuTimes), BoxError> {
    let cpu0 = CpuTimes::now()?;
    let t0 = Instant::now();
    let out = f().map_err(Into::into)?;
    let wall = t0.elapsed();
    let cpu = CpuTimes::now()?.since(cpu0);
    Ok((out, wall, cpu))
}

/// The system share of CPU time, `sys / (user + sys)`, or `None` when no tick was counted.
pub fn sys_share(user_ticks: u64, sys_ticks: u64) -> Option<f64> {
    let total = user_ticks + sys_ticks;
    (total > 0).then(|| sys_ticks as f64 / total as f64)
}

/// Parses the contents of `/proc/<pid>/stat`. The second field, the command name, is in
/// parentheses and may itself hold spaces and parentheses, so fields are counted from the last
/// `)`: what follows it starts with field 3 (`state`), which puts `utime` (field 14) at index 11.
pub fn parse_stat(stat: &str) -> Option<CpuTimes> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let user_ticks = fields.next()?.parse().ok()?;
    let sys_ticks = fields.next()?.parse().ok()?;
    Some(CpuTimes { user_ticks, sys_ticks })
}

/// Parses the CPU time of the reaped children from the contents of `/proc/<pid>/stat`: fields
/// 16 `cutime` and 17 `cstime`, which the kernel adds each child's whole CPU time (and that of
/// the children it reaped in turn) to at the moment the process reaps it, never before.
pub fn parse_stat_reaped(stat: &str) -> Option<CpuTimes> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace().skip(13);
    let user_ticks = fields.next()?.parse().ok()?;
    let sys_ticks = fields.next()?.parse().ok()?;
    Some(CpuTimes { user_ticks, sys_ticks })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_14_and_15_after_a_tricky_command_name() {
        let stat = "4242 (my (odd) cmd) R 1 4242 4242 0 -1 4194304 1234 0 5 0 \
                    731 42 0 0 20 0 1 0 12345 1000000 250 18446744073709551615";
        assert_eq!(parse_stat(stat), Some(CpuTimes { user_ticks: 731, sys_ticks: 42 }));
        assert_eq!(parse_stat_reaped(stat), Some(CpuTimes { user_ticks: 0, sys_ticks: 0 }));
        let stat = "7 (postgres) S 1 7 7 0 -1 4194560 99 0 0 0 5 3 1200 340 20 0 1 0 56254";
        assert_eq!(parse_stat_reaped(stat), Some(CpuTimes { user_ticks: 1200, sys_ticks: 340 }));
    }

    #[test]
    fn rejects_truncated_or_garbled_input() {
        assert_eq!(parse_stat("4242 (cmd) R 1 2 3"), None);
        assert_eq!(parse_stat("no parenthesis at all"), None);
        assert_eq!(parse_stat("1 (x) R 1 1 1 0 -1 0 0 0 0 0 abc 3"), None);
    }

    #[test]
    fn reads_this_process_and_this_thread() {
        let t = CpuTimes::now().unwrap();
        assert_eq!(t.since(t), CpuTimes::default());
        let t = CpuTimes::thread_now().unwrap();
        assert_eq!(t.since(t), CpuTimes::default());
    }

    #[test]
    fn share() {
        assert_eq!(sys_share(0, 0), None);
        assert_eq!(sys_share(3, 1), Some(0.25));
    }
}
