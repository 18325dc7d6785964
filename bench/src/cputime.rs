//! CPU time, split into user and system time, in microseconds.
//!
//! This process's comes from `getrusage(RUSAGE_SELF)` through `nix`'s safe wrapper (the crate
//! denies `unsafe`): every thread's, live or ended, in microseconds. Linux counts the total
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

/// The whole machine's CPU time so far, from the first line of `/proc/stat`, in `USER_HZ` ticks
/// summed over every core: what runs at normal priority (user, system, interrupts, steal) and what
/// runs niced. Less this process's own time, it says how busy other work kept the machine while a
/// benchmark ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MachineTicks {
    /// User (less niced), system, interrupt and steal time.
    pub busy: u64,
    /// Time spent running niced processes.
    pub niced: u64,
}

impl MachineTicks {
    /// The machine's time so far.
    pub fn now() -> io::Result<Self> {
        let stat = std::fs::read_to_string("/proc/stat")?;
        parse_proc_stat(&stat).ok_or_else(|| io::Error::other("unexpected /proc/stat format"))
    }
}

/// Other work's CPU over an interval: the machine's and this process's times at its start.
#[derive(Clone, Copy, Debug)]
pub struct OthersClock {
    machine: MachineTicks,
    mine: CpuTimes,
}

/// How many cores other processes kept busy over an interval, on average.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OthersLoad {
    /// At normal priority (the machine's busy time less this process's).
    pub cores: f64,
    /// Niced.
    pub niced_cores: f64,
}

impl OthersClock {
    /// Starts the interval.
    pub fn start() -> io::Result<Self> {
        Ok(Self { machine: MachineTicks::now()?, mine: CpuTimes::now()? })
    }

    /// Other work over the interval from the start to now, which lasted `secs`.
    pub fn stop(&self, secs: f64) -> io::Result<OthersLoad> {
        let (m, mine) = (MachineTicks::now()?, CpuTimes::now()?.since(self.mine));
        let busy = m.busy.saturating_sub(self.machine.busy);
        let others = busy.saturating_sub(mine.total_us() / US_PER_TICK);
        let per = |ticks: u64| ticks as f64 / (secs.max(1e-9) * USER_HZ as f64);
        Ok(OthersLoad {
            cores: per(others),
            niced_cores: per(m.niced.saturating_sub(self.machine.niced)),
        })
    }
}

/// Parses the aggregate `cpu` line of `/proc/stat`: user nice system idle iowait irq softirq
/// steal (guest time is already inside user).
pub fn parse_proc_stat(stat: &str) -> Option<MachineTicks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_ascii_whitespace().skip(1).map_while(|f| f.parse().ok()).collect();
    let at = |i: usize| v.get(i).copied();
    let (user, nice, system) = (at(0)?, at(1)?, at(2)?);
    let (irq, softirq, steal) = (at(5).unwrap_or(0), at(6).unwrap_or(0), at(7).unwrap_or(0));
    Some(MachineTicks { busy: user + system + irq + softirq + steal, niced: nice })
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
    fn reads_this_process_and_this_thread() {
        let t = CpuTimes::now().unwrap();
        assert_eq!(t.since(t), CpuTimes::default());
        let t = CpuTimes::thread_now().unwrap();
        assert_eq!(t.since(t), CpuTimes::default());
    }

    #[test]
    fn parses_the_machines_cpu_line() {
        let stat = "cpu  100 7 50 9999 3 2 1 4 0 0\ncpu0 50 3 25 5000 1 1 0 2 0 0\nintr 1\n";
        assert_eq!(parse_proc_stat(stat), Some(MachineTicks { busy: 157, niced: 7 }));
        assert_eq!(parse_proc_stat("intr 1"), None);
        let now = MachineTicks::now().unwrap();
        assert!(now.busy > 0);
    }

    #[test]
    fn share() {
        assert_eq!(sys_share(0, 0), None);
        assert_eq!(sys_share(3, 1), Some(0.25));
    }
}
