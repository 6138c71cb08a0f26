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
