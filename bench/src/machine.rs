//! Facts about the machine a benchmark ran on, printed above every table and saved in the JSON.

use serde::Serialize;

/// What a reader needs to compare a result with another machine's.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// The CPU's model name (`/proc/cpuinfo`).
    pub cpu_model: String,
    /// Hardware threads available to this process.
    pub cores: usize,
    /// The kernel release (`/proc/sys/kernel/osrelease`).
    pub kernel: String,
    /// Total memory in GiB (`/proc/meminfo`).
    pub memory_gib: f64,
    /// The clock source behind the timers (`tsc` is cheap to read; others may be system calls).
    pub clocksource: String,
    /// The 1-minute load average when the benchmark started: other work on the machine skews
    /// every number, and a reader should know how busy it was.
    pub load_average_1min: f64,
}

impl Machine {
    /// Reads the facts; anything unreadable is reported as "unknown".
    pub fn detect() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpuinfo = read("/proc/cpuinfo");
        let meminfo = read("/proc/meminfo");
        Self {
            cpu_model: cpu_model(&cpuinfo).unwrap_or_else(|| "unknown".into()),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel: or_unknown(read("/proc/sys/kernel/osrelease")),
            memory_gib: mem_total_kib(&meminfo).unwrap_or(0) as f64 / (1024.0 * 1024.0),
            clocksource: or_unknown(read(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            )),
            load_average_1min: load_1min(&read("/proc/loadavg")).unwrap_or(-1.0),
        }
    }

    /// One line for the top of a report.
    pub fn summary(&self) -> String {
        format!(
            "machine: {} ({} cores), {:.1} GiB RAM, Linux {}, clocksource {}, load average {:.2} \
             at start",
            self.cpu_model,
            self.cores,
            self.memory_gib,
            self.kernel,
            self.clocksource,
            self.load_average_1min
        )
    }
}

fn or_unknown(s: String) -> String {
    let t = s.trim();
    if t.is_empty() { "unknown".into() } else { t.into() }
}

/// The first `model name` in `/proc/cpuinfo`'s text.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_string())
    })
}

/// `MemTotal` in KiB from `/proc/meminfo`'s text.
pub fn mem_total_kib(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    line.split_ascii_whitespace().nth(1)?.parse().ok()
}

/// The 1-minute load average from `/proc/loadavg`'s text.
pub fn load_1min(loadavg: &str) -> Option<f64> {
    loadavg.split_ascii_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpuinfo_and_meminfo() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(cpu_model(cpuinfo).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpu_model("processor : 0\n"), None);
        assert_eq!(mem_total_kib("MemTotal:       24576000 kB\nMemFree: 1 kB\n"), Some(24576000));
        assert_eq!(load_1min("2.87 3.94 2.64 3/412 9921\n"), Some(2.87));
    }
}
