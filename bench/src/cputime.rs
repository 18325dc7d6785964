//! CPU time, split into user and system time, in microseconds.
//!
//! This process's comes from `getrusage(RUSAGE_SELF)` through `nix`'s safe wrapper (the crate
//! forbids `unsafe`): every thread's, live or ended, in microseconds. Linux counts the total
//! exactly (the scheduler's nanosecond runtime) and splits it between user and system time in
//! the proportion its per-tick samples saw, so the total of a short interval is exact and its
//! split is a sample: shares are best pooled over several runs.
//!
//! Another process's CPU time (PostgreSQL's backends and postmaster, which `getrusage` cannot
//! see) is parsed from `/proc/<pid>/stat`: fields 14 `utime` and 15 `stime`, in clock ticks of
//! `USER_HZ`, which Linux fixes at 100 for everything it exports in `/proc` — 10 ms each, which
//! [`CpuTimes::from_ticks`] converts to the same microseconds.

use std::io;
use std::time::{Duration, Instant};

use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::time::{TimeVal, TimeValLike};

use crate::BoxError;

/// Clock ticks per second in `/proc` (the kernel's fixed `USER_HZ`).
pub const USER_HZ: u64 = 100;

/// Microseconds in one clock tick of `/proc`.
pub const US_PER_TICK: u64 = 1_000_000 / USER_HZ;

/// Cumulative CPU time, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// Time spent running user code.
    pub user_us: u64,
    /// Time spent in the kernel on the process's behalf.
    pub sys_us: u64,
}

fn micros(t: TimeVal) -> u64 {
    u64::try_from(t.num_microseconds()).unwrap_or(0)
}

impl CpuTimes {
    /// This process's CPU time so far (all its threads), from `getrusage`.
    pub fn now() -> io::Result<Self> {
        let u = getrusage(UsageWho::RUSAGE_SELF).map_err(io::Error::from)?;
        Ok(CpuTimes { user_us: micros(u.user_time()), sys_us: micros(u.system_time()) })
    }

    /// A CPU time counted in clock ticks of `/proc` ([`USER_HZ`]).
    pub fn from_ticks(user_ticks: u64, sys_ticks: u64) -> Self {
        CpuTimes { user_us: user_ticks * US_PER_TICK, sys_us: sys_ticks * US_PER_TICK }
    }

    /// The CPU time spent between `earlier` and `self`.
    pub fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes {
            user_us: self.user_us.saturating_sub(earlier.user_us),
            sys_us: self.sys_us.saturating_sub(earlier.sys_us),
        }
    }

    /// The sum of two CPU times (of two processes, say).
    pub fn plus(self, other: CpuTimes) -> CpuTimes {
        CpuTimes { user_us: self.user_us + other.user_us, sys_us: self.sys_us + other.sys_us }
    }

    /// User and system time together.
    pub fn total_us(self) -> u64 {
        self.user_us + self.sys_us
    }

    /// User time in milliseconds.
    pub fn user_ms(self) -> f64 {
        self.user_us as f64 / 1e3
    }

    /// System time in milliseconds.
    pub fn sys_ms(self) -> f64 {
        self.sys_us as f64 / 1e3
    }
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

/// The system share of CPU time, `sys / (user + sys)` (any one unit), or `None` when none was
/// counted.
pub fn sys_share(user: u64, sys: u64) -> Option<f64> {
    let total = user + sys;
    (total > 0).then(|| sys as f64 / total as f64)
}

/// Parses the contents of `/proc/<pid>/stat`. The second field, the command name, is in
/// parentheses and may itself hold spaces and parentheses, so fields are counted from the last
/// `)`: what follows it starts with field 3 (`state`), which puts `utime` (field 14) at index 11.
pub fn parse_stat(stat: &str) -> Option<CpuTimes> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let user_ticks = fields.next()?.parse().ok()?;
    let sys_ticks = fields.next()?.parse().ok()?;
    Some(CpuTimes::from_ticks(user_ticks, sys_ticks))
}

/// Parses the CPU time of the reaped children from the contents of `/proc/<pid>/stat`: fields
/// 16 `cutime` and 17 `cstime`, which the kernel adds each child's whole CPU time (and that of
/// the children it reaped in turn) to at the moment the process reaps it, never before.
pub fn parse_stat_reaped(stat: &str) -> Option<CpuTimes> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace().skip(13);
    let user_ticks = fields.next()?.parse().ok()?;
    let sys_ticks = fields.next()?.parse().ok()?;
    Some(CpuTimes::from_ticks(user_ticks, sys_ticks))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fields_14_and_15_after_a_tricky_command_name_into_microseconds() {
        let stat = "4242 (my (odd) cmd) R 1 4242 4242 0 -1 4194304 1234 0 5 0 \
                    731 42 0 0 20 0 1 0 12345 1000000 250 18446744073709551615";
        assert_eq!(parse_stat(stat), Some(CpuTimes { user_us: 7_310_000, sys_us: 420_000 }));
        assert_eq!(parse_stat_reaped(stat), Some(CpuTimes::default()));
        let stat = "7 (postgres) S 1 7 7 0 -1 4194560 99 0 0 0 5 3 1200 340 20 0 1 0 56254";
        assert_eq!(parse_stat_reaped(stat), Some(CpuTimes::from_ticks(1200, 340)));
    }

    #[test]
    fn rejects_truncated_or_garbled_input() {
        assert_eq!(parse_stat("4242 (cmd) R 1 2 3"), None);
        assert_eq!(parse_stat("no parenthesis at all"), None);
        assert_eq!(parse_stat("1 (x) R 1 1 1 0 -1 0 0 0 0 0 abc 3"), None);
    }

    /// What 10 ms ticks cannot show: polled in a loop, the counter first moves by far less than
    /// a tick (each poll costs a microsecond or so), where a tick counter moves by 10 ms at once.
    #[test]
    fn the_counter_moves_by_microseconds_not_ticks() {
        let t0 = CpuTimes::now().unwrap();
        let step = loop {
            let d = CpuTimes::now().unwrap().since(t0);
            if d.total_us() > 0 {
                break d.total_us();
            }
        };
        assert!(step < US_PER_TICK, "the first step was {step} us");
        assert_eq!(t0.since(t0), CpuTimes::default());
    }

    #[test]
    fn share() {
        assert_eq!(sys_share(0, 0), None);
        assert_eq!(sys_share(3, 1), Some(0.25));
    }
}
