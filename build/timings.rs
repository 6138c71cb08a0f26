//! What each step of the build script costs, said when [`VAR`] is set (not
//! empty, not `0`; read with the rest of the environment, `build/config.rs`): one `cargo:warning` line per step,
//! `timing <step>: <cpu> s CPU, <wall> s wall`, and a last one for the whole
//! script (`timing total: ...`). CPU is user + system seconds of the script,
//! all its threads, and the processes it waited for (the C compiler and
//! preprocessor), so a loaded machine moves it less than the wall time; it is
//! read from `/proc/self/stat` (Linux; elsewhere `?`). `cargo xtask
//! bench-build` reads these lines.

use std::cell::Cell;
use std::time::Instant;

/// The variable that asks for the timings.
pub const VAR: &str = "CUDA_MEM_SYS_BUILD_TIMINGS";

/// A step's line: the prefix `cargo xtask bench-build` looks for.
pub const PREFIX: &str = "timing ";

/// The steps' clock: each [`Timings::lap`] ends the step begun at the last.
pub struct Timings {
    on: bool,
    start: (Option<f64>, Instant),
    last: Cell<(Option<f64>, Instant)>,
}

impl Timings {
    /// Timings that say nothing unless `on`.
    pub fn new(on: bool) -> Self {
        let now = (if on { cpu_seconds() } else { None }, Instant::now());
        Timings {
            on,
            start: now,
            last: Cell::new(now),
        }
    }

    /// Ends the step running since the last lap (or the start), named `step`.
    pub fn lap(&self, step: &str) {
        if !self.on {
            return;
        }
        let now = (cpu_seconds(), Instant::now());
        say(step, self.last.replace(now), now);
    }

    /// The whole script, from [`Timings::new`] to now.
    pub fn total(&self) {
        if self.on {
            say("total", self.start, (cpu_seconds(), Instant::now()));
        }
    }
}

fn say(step: &str, from: (Option<f64>, Instant), to: (Option<f64>, Instant)) {
    let cpu = match (from.0, to.0) {
        (Some(a), Some(b)) => format!("{:.2}", b - a),
        _ => "?".to_string(),
    };
    let wall = to.1.duration_since(from.1).as_secs_f64();
    println!("cargo:warning={PREFIX}{step}: {cpu} s CPU, {wall:.2} s wall");
}

/// User + system seconds of this process (all threads) and of its children
/// waited for: `/proc/self/stat`'s utime, stime, cutime and cstime, in clock
/// ticks of 1/100 s (Linux's `USER_HZ`).
pub fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (which may hold spaces and parentheses).
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // utime is field 14 (1-based); the list starts at field 3.
    let mut ticks = 0.0;
    for i in 14..=17 {
        ticks += fields.get(i - 3)?.parse::<f64>().ok()?;
    }
    Some(ticks / 100.0)
}

/// A line of [`Timings`] (`cargo:warning=` already taken off): the step, its
/// CPU seconds (`None`: not measured) and wall seconds.
#[allow(dead_code)] // `cargo xtask bench-build` reads them; the build script writes them
pub fn parse_line(line: &str) -> Option<(String, Option<f64>, f64)> {
    let (step, rest) = line.strip_prefix(PREFIX)?.rsplit_once(": ")?;
    let (cpu, wall) = rest.strip_suffix(" s wall")?.split_once(" s CPU, ")?;
    Some((step.to_string(), cpu.parse().ok(), wall.parse().ok()?))
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_back_its_lines() {
        assert_eq!(
            super::parse_line("timing bindgen: 1.25 s CPU, 2.00 s wall"),
            Some(("bindgen".to_string(), Some(1.25), 2.0))
        );
        assert_eq!(
            super::parse_line("timing link: ? s CPU, 0.10 s wall"),
            Some(("link".to_string(), None, 0.1))
        );
        // Not a timing line: another warning.
        assert_eq!(super::parse_line("no libcuda.so in ...: linked"), None);
    }
}
