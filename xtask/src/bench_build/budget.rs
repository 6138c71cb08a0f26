//! The build-time budget's checks and the build script's steps table, from
//! the figures [`super::run`] measures (their wrong twins are the unit tests
//! below).

use super::report::AfterBindgen;
use super::Figures;

/// The build script that runs bindgen: at most bindgen's own run + this.
pub const SCRIPT_BUDGET_S: f64 = 1.5;
/// The clean build of (a): at most this × the linked floor's.
pub const CLEAN_BUDGET: f64 = 1.10;

/// The budget's two checks, as Markdown lines: (a')'s build script against
/// bindgen's own run (the floor's build script), (a)'s clean build against
/// the linked floor's; a missing figure fails.
pub fn budget(a: &Figures, a2: &Figures, linked: &Figures, run: &Figures) -> String {
    let verdict = |ok: bool| if ok { "**pass**" } else { "**FAIL**" };
    let script = match (a2.script, run.script) {
        (Some(s), Some(b)) => format!(
            "- {}: the build script that runs bindgen ((a')) took {s:.1} s, bindgen's own run \
             (the floor's build script) {b:.1} s: at most {b:.1} + {SCRIPT_BUDGET_S} = {:.1} s \
             is allowed.",
            verdict(s <= b + SCRIPT_BUDGET_S),
            b + SCRIPT_BUDGET_S
        ),
        _ => "- **FAIL**: no build-script duration in a `--timings` report of (a') or of the \
              floor of (a')."
            .to_string(),
    };
    let allowed = CLEAN_BUDGET * linked.clean_wall;
    format!(
        "{script}\n- {}: the clean build of (a) took {:.1} s, the linked floor's {:.1} s: at \
         most {CLEAN_BUDGET:.2} × {:.1} = {allowed:.1} s is allowed.\n",
        verdict(a.clean_wall <= allowed),
        a.clean_wall,
        linked.clean_wall,
        linked.clean_wall,
    )
}

/// Where (a)'s clean build cannot meet its budget on `cores` cores whatever
/// the schedule (its CPU time over the cores is above the allowed wall
/// time), the line that says so: only less CPU can meet it there.
pub fn cpu_bound(a: &Figures, linked: &Figures, cores: usize) -> Option<String> {
    let allowed = CLEAN_BUDGET * linked.clean_wall;
    let least = a.clean_cpu / cores as f64;
    (least > allowed).then(|| {
        format!(
            "- Why (a) cannot pass here: its clean build needs {:.1} s of CPU, so on this \
             machine's {cores} cores no schedule takes less than {least:.1} s of wall time, above \
             the {allowed:.1} s allowed. Only less CPU can meet the budget here: the crate's own \
             share, {:.1} s of CPU above the linked floor's {:.1} s (its build script compiled, \
             `cc` and `pkg-config`, the bindings compiled). And the bindings compile only after \
             the build script has run, which runs only after bindgen is compiled: their compile \
             comes after the floor's whole critical path.\n",
            a.clean_cpu,
            a.clean_cpu - linked.clean_cpu,
            linked.clean_cpu,
        )
    })
}

/// Where (a)'s clean build is over its budget, the line that says where its
/// time over the linked floor's goes: bindgen compiled later than in the
/// floor (what compiles beside it), and what follows bindgen's compile,
/// which no schedule can move before it.
pub fn over_budget(a: &Figures, linked: &Figures) -> Option<String> {
    let allowed = CLEAN_BUDGET * linked.clean_wall;
    if a.clean_wall <= allowed {
        return None;
    }
    let (Some(ours), Some(floor)) = (&a.after_bindgen, &linked.after_bindgen) else {
        return Some(
            "- Where (a) is over: unknown (no bindgen unit in a `--timings` report of (a) \
             or of the linked floor).\n"
                .to_string(),
        );
    };
    let list = |after: &AfterBindgen| {
        after
            .units
            .iter()
            .map(|(label, d)| format!("{label} {d:.2} s"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Some(format!(
        "- Where (a) is over (`--timings`, medians): bindgen had compiled {:.1} s into (a)'s \
         build and {:.1} s into the floor's ({:+.1} s: what compiles beside it); after that \
         (a) went on {:.2} s ({}), the floor {:.2} s ({}): {:+.2} s. What follows bindgen's \
         compile follows it in any schedule (the build script links bindgen; the crate \
         compiles after its build script has run), and the budget leaves {:.2} s above the \
         floor's {:.1} s for the whole of (a)'s own share.\n",
        ours.bindgen_end,
        floor.bindgen_end,
        ours.bindgen_end - floor.bindgen_end,
        ours.after,
        list(ours),
        floor.after,
        list(floor),
        ours.after - floor.after,
        allowed - linked.clean_wall,
        linked.clean_wall,
    ))
}

/// The build script's steps in (a) and (a'), side by side, and bindgen's
/// own run beside them.
pub fn steps_table(a: &Figures, a2: &Figures, run: &Figures) -> String {
    // (a')'s steps in order; (a)'s own (the committed bindings) after the
    // step (a) ran before them.
    let mut names: Vec<&str> = a2.steps.iter().map(|(s, _, _)| s.as_str()).collect();
    let mut after = 0;
    for (s, _, _) in &a.steps {
        match names.iter().position(|n| *n == s.as_str()) {
            Some(i) => after = i + 1,
            None => {
                names.insert(after, s);
                after += 1;
            }
        }
    }
    let cell = |f: &Figures, name: &str| {
        f.steps
            .iter()
            .find(|(s, _, _)| s == name)
            .map_or("- | -".to_string(), |(_, cpu, wall)| {
                let cpu = cpu.map_or("?".to_string(), |c| format!("{c:.2}"));
                format!("{cpu} s | {wall:.2} s")
            })
    };
    let mut rows = String::new();
    for name in names {
        rows.push_str(&format!(
            "| {name} | {} | {} |\n",
            cell(a, name),
            cell(a2, name)
        ));
    }
    rows.push_str(&format!(
        "| bindgen's own run: the floor of (a')'s build script (`--timings`) | - | - | - | {} |\n",
        run.script.map_or("-".to_string(), |s| format!("{s:.2} s"))
    ));
    format!(
        "| build script step (`CUDA_MEM_SYS_BUILD_TIMINGS`) | (a) CPU | (a) wall | (a') CPU | (a') wall |\n\
         |---|---|---|---|---|\n{rows}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `why` holds each of `figures`.
    fn says(why: &str, figures: &[&str]) {
        for figure in figures {
            assert!(why.contains(figure), "{figure}: {why}");
        }
    }

    fn figures(clean_wall: f64, script: Option<f64>) -> Figures {
        Figures {
            clean_wall,
            clean_cpu: 0.0,
            noop_wall: 0.0,
            script,
            after_bindgen: None,
            steps: vec![],
            noop_fresh: true,
        }
    }

    #[test]
    fn budget_passes_within_and_fails_beyond() {
        let (linked, run) = (figures(20.0, None), figures(21.0, Some(2.4)));
        // Within: 3.9 s <= 2.4 + 1.5; 22.0 s <= 1.10 x 20.0.
        let ok = budget(
            &figures(22.0, Some(0.4)),
            &figures(30.0, Some(3.9)),
            &linked,
            &run,
        );
        assert_eq!(ok.matches("**pass**").count(), 2, "{ok}");
        // Beyond: 4.7 s > 3.9 s; 22.1 s > 22.0 s.
        let bad = budget(
            &figures(22.1, Some(0.4)),
            &figures(30.0, Some(4.7)),
            &linked,
            &run,
        );
        assert_eq!(bad.matches("**FAIL**").count(), 2, "{bad}");
        // A missing duration is a failure, never a pass.
        let missing = budget(&figures(22.0, None), &figures(30.0, None), &linked, &run);
        assert!(missing.starts_with("- **FAIL**"), "{missing}");
    }

    #[test]
    fn cpu_bound_is_said_only_where_no_schedule_can_pass() {
        let mut a = figures(10.7, None);
        a.clean_cpu = 18.0;
        let mut linked = figures(7.6, None);
        linked.clean_cpu = 12.8;
        // 18.0 / 2 = 9.0 s > 1.10 x 7.6 = 8.4 s: said, with the figures.
        let why = cpu_bound(&a, &linked, 2).expect("2 cores cannot pass");
        says(
            &why,
            &[
                "18.0 s of CPU",
                "than 9.0 s",
                "the 8.4 s allowed",
                "5.2 s of CPU above",
            ],
        );
        // 18.0 / 4 = 4.5 s: a schedule could pass, nothing is said.
        assert_eq!(cpu_bound(&a, &linked, 4), None);
    }

    #[test]
    fn steps_table_rows_have_every_column_in_the_order_run() {
        let step = |s: &str| (s.to_string(), Some(0.5), 1.0);
        let mut a = figures(0.0, None);
        a.steps = vec![step("locate"), step("committed bindings"), step("total")];
        let mut a2 = figures(0.0, None);
        a2.steps = vec![step("locate"), step("bindgen"), step("total")];
        let table = steps_table(&a, &a2, &figures(0.0, Some(0.9)));
        let rows: Vec<&str> = table.lines().skip(2).collect();
        let first = |r: &str| {
            r.split(" | ")
                .next()
                .unwrap()
                .trim_start_matches("| ")
                .to_string()
        };
        assert_eq!(
            rows.iter().map(|r| first(r)).collect::<Vec<_>>(),
            [
                "locate",
                "committed bindings",
                "bindgen",
                "total",
                "bindgen's own run: the floor of (a')'s build script (`--timings`)"
            ]
        );
        for r in &rows {
            // Six cells: the step, (a) CPU and wall, (a') CPU and wall.
            assert_eq!(r.matches(" | ").count(), 4, "{r}");
        }
        assert!(
            rows[1].ends_with("| 0.50 s | 1.00 s | - | - |"),
            "{}",
            rows[1]
        );
        assert!(
            rows[2].contains("| - | - | 0.50 s | 1.00 s |"),
            "{}",
            rows[2]
        );
    }

    #[test]
    fn over_budget_is_said_only_beyond_the_budget_with_its_figures() {
        let after = |end: f64, units: &[(&str, f64)]| AfterBindgen {
            bindgen_end: end,
            after: units.iter().map(|(_, d)| d).sum(),
            units: units.iter().map(|(l, d)| (l.to_string(), *d)).collect(),
        };
        let mut linked = figures(7.6, None);
        linked.after_bindgen = Some(after(7.4, &[("floor's build script compiled", 0.2)]));
        let mut a = figures(9.4, None);
        a.after_bindgen = Some(after(
            7.7,
            &[
                ("cuda-mem-sys's build script compiled", 1.0),
                ("cuda-mem-sys compiled", 0.6),
            ],
        ));
        let why = over_budget(&a, &linked).expect("9.4 s > 1.10 x 7.6 s");
        says(
            &why,
            &[
            "7.7 s into (a)'s build and 7.4 s into the floor's (+0.3 s",
            "(a) went on 1.60 s (cuda-mem-sys's build script compiled 1.00 s, cuda-mem-sys compiled 0.60 s)",
            "the floor 0.20 s (floor's build script compiled 0.20 s): +1.40 s",
            "leaves 0.76 s above the floor's 7.6 s",
        ],
        );
        // Within the budget: nothing to explain.
        a.clean_wall = 8.3;
        assert_eq!(over_budget(&a, &linked), None);
        // Over it without the reports: said, never silently skipped.
        a.clean_wall = 9.4;
        a.after_bindgen = None;
        assert!(over_budget(&a, &linked).unwrap().contains("unknown"));
    }
}
