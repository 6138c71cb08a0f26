//! What `cargo xtask bench-build` reads back from each build: cargo's
//! `--timings` report (each unit's start and duration: the build script's
//! run, what follows bindgen) and the build script's own
//! `CUDA_MEM_SYS_BUILD_TIMINGS` lines, and the medians over the runs.

use std::path::Path;

pub(super) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// One unit of a `--timings` report: a crate's compile, or a build script's
/// compile or run.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Unit {
    pub(super) name: String,
    /// `""` (the library), `"build-script"` or `"build-script (run)"`.
    pub(super) target: String,
    /// Seconds from the build's start.
    pub(super) start: f64,
    pub(super) duration: f64,
}

impl Unit {
    /// What it is, in words: `bindgen compiled`, `cc's build script run`.
    fn label(&self) -> String {
        match self.target.as_str() {
            "build-script" => format!("{}'s build script compiled", self.name),
            "build-script (run)" => format!("{}'s build script run", self.name),
            "" => format!("{} compiled", self.name),
            other => format!("{} {other}", self.name),
        }
    }
}

/// The units of a `--timings` report (`cargo-timing.html`'s `UNIT_DATA`).
pub(super) fn units(html: &str) -> Vec<Unit> {
    let Some(data) = html.split("const UNIT_DATA = ").nth(1) else {
        return vec![];
    };
    let data = data.split(";\n").next().unwrap_or(data);
    // One object per unit: {"i":..,"name":"..","version":"..","mode":"..","target":"..",..,"duration":..}
    data.split('{')
        .filter_map(|unit| {
            let field = |k: &str| {
                let v = unit.split(&format!("\"{k}\":")).nth(1)?;
                Some(
                    v.split([',', '}'])
                        .next()?
                        .trim()
                        .trim_matches('"')
                        .to_string(),
                )
            };
            Some(Unit {
                name: field("name")?,
                target: field("target")?.trim().to_string(),
                start: field("start")?.parse().ok()?,
                duration: field("duration")?.parse().ok()?,
            })
        })
        .collect()
}

/// The units of the `--timings` report in `target`.
pub(super) fn report_units(target: &Path) -> Vec<Unit> {
    std::fs::read_to_string(target.join("cargo-timings/cargo-timing.html"))
        .map(|html| units(&html))
        .unwrap_or_default()
}

/// The duration of the run of `package`'s build script.
pub(super) fn build_script_run(units: &[Unit], package: &str) -> Option<f64> {
    units
        .iter()
        .find(|u| u.name == package && u.target == "build-script (run)")
        .map(|u| u.duration)
}

/// What a clean build did once bindgen had compiled. In the builds measured
/// here every unit then waits for bindgen, whatever the schedule (a build
/// script that needs bindgen links it; the crate compiles after its build
/// script has run, the user's library after the crate).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct AfterBindgen {
    /// Seconds from the build's start to the end of bindgen's compile.
    pub(super) bindgen_end: f64,
    /// Seconds from then to the build's end.
    pub(super) after: f64,
    /// (label, seconds) of each unit that started once bindgen had compiled.
    pub(super) units: Vec<(String, f64)>,
}

pub(super) fn after_bindgen(units: &[Unit]) -> Option<AfterBindgen> {
    let bindgen = units
        .iter()
        .find(|u| u.name == "bindgen" && u.target.is_empty())?;
    let bindgen_end = bindgen.start + bindgen.duration;
    let end = units
        .iter()
        .map(|u| u.start + u.duration)
        .fold(bindgen_end, f64::max);
    // The report's times are rounded to 10 ms: a unit started "at" the end.
    let mut then: Vec<&Unit> = units
        .iter()
        .filter(|u| u.start >= bindgen_end - 0.015)
        .collect();
    then.sort_by(|a, b| a.start.total_cmp(&b.start));
    Some(AfterBindgen {
        bindgen_end,
        after: end - bindgen_end,
        units: then.iter().map(|u| (u.label(), u.duration)).collect(),
    })
}

/// The median of each figure over the runs (the units of the first run, in
/// its order).
pub(super) fn median_after(runs: &[AfterBindgen]) -> Option<AfterBindgen> {
    let first = runs.first()?;
    let of = |f: fn(&AfterBindgen) -> f64| median(runs.iter().map(f).collect());
    Some(AfterBindgen {
        bindgen_end: of(|r| r.bindgen_end),
        after: of(|r| r.after),
        units: first
            .units
            .iter()
            .map(|(label, _)| {
                let d: Vec<f64> = runs
                    .iter()
                    .flat_map(|r| r.units.iter().filter(|(l, _)| l == label))
                    .map(|(_, d)| *d)
                    .collect();
                (label.clone(), median(d))
            })
            .collect(),
    })
}

/// The `CUDA_MEM_SYS_BUILD_TIMINGS` lines of `package`'s build script run
/// in `target` (its `output` file): (step, CPU s, wall s), in order.
pub(super) fn script_steps(target: &Path, package: &str) -> Vec<(String, Option<f64>, f64)> {
    let Ok(dirs) = std::fs::read_dir(target.join("debug/build")) else {
        return vec![];
    };
    let prefix = format!("{package}-");
    dirs.flatten()
        .filter(|d| d.file_name().to_string_lossy().starts_with(&prefix))
        .filter_map(|d| std::fs::read_to_string(d.path().join("output")).ok())
        .flat_map(|text| {
            text.lines()
                .filter_map(|l| generator::tools::parse_line(l.strip_prefix("cargo:warning=")?))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Each step's median over the runs (the steps of the first run, in its
/// order; a step missing from a run counts as absent there).
pub(super) fn median_steps(
    runs: &[Vec<(String, Option<f64>, f64)>],
) -> Vec<(String, Option<f64>, f64)> {
    let Some(first) = runs.first() else {
        return vec![];
    };
    first
        .iter()
        .map(|(step, _, _)| {
            let of_step = || runs.iter().flatten().filter(|(s, _, _)| s == step);
            let cpu: Vec<f64> = of_step().filter_map(|(_, c, _)| *c).collect();
            let wall: Vec<f64> = of_step().map(|(_, _, w)| *w).collect();
            (
                step.clone(),
                (!cpu.is_empty()).then(|| median(cpu)),
                median(wall),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_the_median_of_the_runs() {
        let run = |cpu: f64, wall: f64| vec![("bindgen".to_string(), Some(cpu), wall)];
        let steps = median_steps(&[run(1.0, 9.0), run(3.0, 2.0), run(2.0, 1.0)]);
        assert_eq!(steps, vec![("bindgen".to_string(), Some(2.0), 2.0)]);
        assert!(median_steps(&[]).is_empty());
    }

    #[test]
    fn what_follows_bindgen_is_read_from_the_timings_report() {
        let html = report(&[
            ("syn", "", 0.5, 2.5),
            ("bindgen", "", 3.0, 2.0),
            // Ended before bindgen did: beside it, not after it.
            ("cc", "", 3.5, 1.0),
            ("cuda-mem-sys", " build-script", 5.0, 1.0),
            ("cuda-mem-sys", " build-script (run)", 6.0, 0.1),
            ("cuda-mem-sys", "", 6.1, 0.5),
            ("user", "", 6.6, 0.02),
        ]);
        let units = units(&html);
        assert_eq!(units.len(), 7);
        assert_eq!(build_script_run(&units, "cuda-mem-sys"), Some(0.1));
        assert_eq!(build_script_run(&units, "cc"), None);
        let after = after_bindgen(&units).expect("bindgen is in the report");
        assert_eq!(after.bindgen_end, 5.0);
        assert!((after.after - 1.62).abs() < 1e-9, "{after:?}");
        assert_eq!(
            after
                .units
                .iter()
                .map(|(l, _)| l.as_str())
                .collect::<Vec<_>>(),
            [
                "cuda-mem-sys's build script compiled",
                "cuda-mem-sys's build script run",
                "cuda-mem-sys compiled",
                "user compiled"
            ]
        );
        // bindgen's build script is not bindgen: without its library's
        // unit nothing is said.
        let no_bindgen = units
            .iter()
            .filter(|u| u.name != "bindgen")
            .cloned()
            .chain([Unit {
                name: "bindgen".into(),
                target: "build-script".into(),
                start: 0.0,
                duration: 0.2,
            }])
            .collect::<Vec<_>>();
        assert_eq!(after_bindgen(&no_bindgen), None);
        assert!(super::units("no report").is_empty());
    }

    #[test]
    fn what_follows_bindgen_is_the_median_of_the_runs() {
        let run = |end: f64, after: f64, script: f64| AfterBindgen {
            bindgen_end: end,
            after,
            units: vec![("x's build script compiled".into(), script)],
        };
        let m = median_after(&[run(5.0, 2.0, 1.0), run(9.0, 1.0, 3.0), run(6.0, 3.0, 2.0)]);
        assert_eq!(m, Some(run(6.0, 2.0, 2.0)));
        assert_eq!(median_after(&[]), None);
    }

    /// A `--timings` report's text holding these units (name, target, start, duration).
    fn report(units: &[(&str, &str, f64, f64)]) -> String {
        let objects: Vec<String> = units
            .iter()
            .enumerate()
            .map(|(i, (name, target, start, duration))| {
                format!(
                    "{{\"i\":{i},\"name\":\"{name}\",\"version\":\"1.0.0\",\"mode\":\"todo\",\
                     \"target\":\"{target}\",\"start\":{start},\"duration\":{duration},\
                     \"rmeta_time\":null,\"unlocked_units\":[],\"unlocked_rmeta_units\":[],\
                     \"sections\":null}}"
                )
            })
            .collect();
        format!(
            "<script>\nconst UNIT_DATA = [{}];\nconst CONCURRENCY_DATA = [];\n",
            objects.join(",")
        )
    }
}
