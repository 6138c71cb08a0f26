//! `cargo xtask device-report` (no argument): the table of
//! `docs/device-results.md`, per release × build × GPU count the latest
//! result, made from the runs listed in `records/device-runs/runs.tsv` and the
//! raw summaries they name (what `run.sh` / `matrix.sh` wrote), and the list
//! of every run below it. It rewrites the part of the page between
//! [`BEGIN`] and [`END`]; `--check` only says whether that part is current.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// Where the generated part of `docs/device-results.md` starts and ends.
pub const BEGIN: &str = "<!-- cargo xtask device-report: from here to the end mark -->";
pub const END: &str = "<!-- end of cargo xtask device-report -->";

/// One test binary's line of `summary.json`.
#[derive(Debug, Default, PartialEq)]
pub struct BinaryRun {
    pub name: String,
    pub exit: i64,
    pub passed: u64,
    pub failed: u64,
    pub ignored: u64,
    pub seconds: u64,
}

/// One example's line of `summary.json`: name, exit code, last line.
#[derive(Debug, PartialEq)]
pub struct ExampleRun {
    pub name: String,
    pub exit: i64,
    pub last: String,
}

/// The number after `"key": ` in a line of run.sh's JSON.
pub fn json_num(line: &str, key: &str) -> Option<i64> {
    let rest = &line[line.find(&format!("\"{key}\": "))? + key.len() + 4..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// The name before `": {` at the start of a line of run.sh's JSON.
fn json_name(line: &str) -> Option<String> {
    let l = line.trim_start().strip_prefix('"')?;
    Some(l[..l.find("\": {")?].to_string())
}

/// The binaries and examples of one `summary.json` (run.sh writes one entry a line).
pub fn parse_summary(text: &str) -> (Vec<BinaryRun>, Vec<ExampleRun>) {
    let (mut bins, mut examples) = (vec![], vec![]);
    for line in text.lines() {
        let (Some(name), Some(exit)) = (json_name(line), json_num(line, "exit")) else {
            continue;
        };
        if let Some(i) = line.find("\"last\": \"") {
            let last = line[i + 9..].trim_end().trim_end_matches(',');
            let last = last.strip_suffix("\"}").unwrap_or(last);
            examples.push(ExampleRun {
                name,
                exit,
                last: last.replace("\\\"", "\"").replace("\\\\", "\\"),
            });
        } else if let Some(passed) = json_num(line, "passed") {
            let n = |k| json_num(line, k).unwrap_or(0) as u64;
            bins.push(BinaryRun {
                name,
                exit,
                passed: passed as u64,
                failed: n("failed"),
                ignored: n("ignored"),
                seconds: n("seconds"),
            });
        }
    }
    (bins, examples)
}

/// One line of `runs.tsv`.
#[derive(Debug, Clone)]
pub struct Run {
    pub id: String,
    date: String,
    hardware: String,
    driver: String,
    tree: String,
    raw: Vec<String>,
    what: String,
    result: String,
}

/// `runs.tsv`, oldest first: run, date, hardware, driver, tree, raw files
/// (comma-separated, `-` for none), what ran, result; `#` lines are comments.
pub fn read_index(text: &str) -> Result<Vec<Run>, String> {
    let mut runs = vec![];
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let [id, date, hardware, driver, tree, raw, what, result] = f[..] else {
            return Err(format!(
                "runs.tsv line {}: {} fields, 8 expected (run, date, hardware, driver, tree, raw, what ran, result)",
                n + 1,
                f.len()
            ));
        };
        let raw = match raw {
            "-" => vec![],
            r => r.split(',').map(|s| s.trim().to_string()).collect(),
        };
        runs.push(Run {
            id: id.into(),
            date: date.into(),
            hardware: hardware.into(),
            driver: driver.into(),
            tree: tree.into(),
            raw,
            what: what.into(),
            result: result.into(),
        });
    }
    Ok(runs)
}

/// One build's summary in a raw file: (release, build, GPUs, binaries,
/// examples, sanitizer verdict).
type Part = (
    String,
    String,
    u64,
    Vec<BinaryRun>,
    Vec<ExampleRun>,
    Option<String>,
);

/// The build a bundle binary's suffix names (`vmm-loaded-ptds`: `loaded-ptds`).
fn build_of(suffix: Option<&str>) -> String {
    match suffix {
        None => "linked".into(),
        Some(s) if s.starts_with("loaded") => s.into(),
        Some(s) => format!("linked-{s}"),
    }
}

fn sanitizer_bar(text: &str) -> Option<String> {
    let at = text.find("\"bar\": \"")? + 8;
    Some(text[at..at + text[at..].find('"')?].to_string())
}

fn gpus(text: &str) -> u64 {
    json_num(text, "gpus").map_or(1, |n| n.max(1) as u64)
}

/// The builds of one raw file: `== <...>/<release>/<build>/summary.json`
/// sections (matrix.sh's folders, concatenated, later sections newer), or
/// one bundle's summary.json (its binaries' suffixes name the builds; the
/// examples and the sanitizer go with the linked build, as run.sh runs them).
pub fn parts(text: &str) -> Vec<Part> {
    let mut out = vec![];
    if text.starts_with("== ") || text.contains("\n== ") {
        for section in text.split("\n== ").map(|s| s.trim_start_matches("== ")) {
            let Some((head, body)) = section.split_once('\n') else {
                continue;
            };
            let path: Vec<&str> = head.trim().split('/').collect();
            if let [.., release, build, "summary.json"] = path[..] {
                let (bins, ex) = parse_summary(body);
                out.push((
                    release.into(),
                    build.into(),
                    gpus(body),
                    bins,
                    ex,
                    sanitizer_bar(body),
                ));
            }
        }
        return out;
    }
    let release = text
        .split_once("\"headers\": \"CUDA ")
        .and_then(|(_, r)| r.split_whitespace().next())
        .unwrap_or("13.0")
        .to_string();
    let (bins, examples) = parse_summary(text);
    let mut builds: BTreeMap<String, Vec<BinaryRun>> = BTreeMap::new();
    for mut b in bins {
        let (base, suffix) = match b.name.split_once('-') {
            Some((base, s)) => (base.to_string(), Some(s.to_string())),
            None => (b.name.clone(), None),
        };
        let build = build_of(suffix.as_deref());
        b.name = base;
        builds.entry(build).or_default().push(b);
    }
    let bar = sanitizer_bar(text);
    let mut examples = Some(examples);
    // The sanitizer's verdict is of the builds its binaries are (`vmm-loaded`
    // is the loaded build's): every build among those under memcheck.
    let sanitized: Vec<String> = text
        .split("\"memcheck\": {")
        .nth(1)
        .and_then(|m| m.split("\n    }").next())
        .map(|m| {
            let mut b: Vec<String> = m
                .lines()
                .filter_map(json_name)
                .map(|n| {
                    build_of(
                        n.split_once('-')
                            .map(|(_, s)| s.split('/').next().unwrap_or(s)),
                    )
                })
                .collect();
            b.dedup();
            b
        })
        .unwrap_or_default();
    if builds.is_empty() && bar.is_some() {
        for b in &sanitized {
            builds.insert(b.clone(), vec![]);
        }
        if sanitized.is_empty() {
            builds.insert("linked".into(), vec![]);
        }
    }
    for (build, bins) in builds {
        let linked = build == "linked";
        let verdict = sanitized.contains(&build) || (sanitized.is_empty() && linked);
        out.push((
            release.clone(),
            build,
            gpus(text),
            bins,
            linked
                .then(|| examples.take())
                .flatten()
                .unwrap_or_default(),
            verdict.then(|| bar.clone()).flatten(),
        ));
    }
    out
}

/// Per release × build × GPUs: each binary's newest result, the examples'
/// newest, the newest sanitizer verdict, each with its run's index.
#[derive(Default)]
struct Cell {
    bins: BTreeMap<String, (BinaryRun, usize)>,
    examples: Option<(Vec<ExampleRun>, usize)>,
    sanitizer: Option<(String, usize)>,
}

fn release_key(r: &str) -> (u32, u32) {
    let (a, b) = r.split_once('.').unwrap_or((r, "0"));
    (a.parse().unwrap_or(0), b.parse().unwrap_or(0))
}

/// The page's generated part from the runs and a reader of their raw files;
/// also the raw files the table cites.
pub fn page(
    runs: &[Run],
    read: impl Fn(&str) -> Result<String, String>,
) -> Result<(String, BTreeSet<String>), String> {
    let mut cells: BTreeMap<((u32, u32), String, u64), Cell> = BTreeMap::new();
    let mut releases: BTreeMap<(u32, u32), String> = BTreeMap::new();
    for (i, run) in runs.iter().enumerate() {
        for file in &run.raw {
            for (release, build, gpus, bins, examples, bar) in parts(&read(file)?) {
                let key = release_key(&release);
                releases.insert(key, release);
                let cell = cells.entry((key, build, gpus)).or_default();
                for b in bins {
                    cell.bins.insert(b.name.clone(), (b, i));
                }
                if !examples.is_empty() {
                    cell.examples = Some((examples, i));
                }
                if let Some(bar) = bar {
                    cell.sanitizer = Some((bar, i));
                }
            }
        }
    }
    let mut md = String::from(
        "| release | build | GPUs | latest run | date | hardware | tree | binaries | passed | failed | ignored | sanitizer | examples OK |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut cited: BTreeSet<usize> = BTreeSet::new();
    let (mut failures, mut not_started) = (vec![], vec![]);
    for ((key, build, gpus), cell) in &cells {
        let release = &releases[key];
        let mut from: BTreeSet<usize> = cell.bins.values().map(|(_, i)| *i).collect();
        from.extend(cell.examples.iter().map(|(_, i)| *i));
        let latest = *from.iter().max().unwrap_or(&0);
        let sum = |f: fn(&BinaryRun) -> u64| cell.bins.values().map(|(b, _)| f(b)).sum::<u64>();
        for (b, i) in cell.bins.values() {
            let at = format!(
                "{release} {build}, {gpus} GPU(s): `{}` (run {})",
                b.name, runs[*i].id
            );
            if b.exit == 127 && b.passed + b.failed + b.ignored == 0 {
                not_started.push(at);
            } else if b.failed > 0 || b.exit != 0 {
                failures.push(format!("{at}: exit {}, {} failed", b.exit, b.failed));
            }
        }
        let examples = cell.examples.as_ref().map_or("—".to_string(), |(ex, i)| {
            let ok = |e: &&ExampleRun| {
                e.exit == 0 && e.last.starts_with("OK:")
                    || e.exit == 77 && e.last.starts_with("skipped:")
            };
            for e in ex.iter().filter(|e| !ok(e)) {
                failures.push(format!(
                    "{release} {build}, {gpus} GPU(s): example `{}` exit {} (run {})",
                    e.name, e.exit, runs[*i].id
                ));
            }
            format!("{} / {}", ex.iter().filter(ok).count(), ex.len())
        });
        let sanitizer = cell.sanitizer.as_ref().map_or("—".to_string(), |(bar, i)| {
            cited.insert(*i);
            format!("{bar} (run {})", runs[*i].id)
        });
        let mut ids: Vec<&str> = from.iter().map(|i| runs[*i].id.as_str()).collect();
        ids.reverse();
        cited.extend(from.iter().copied());
        let r = &runs[latest];
        let _ = writeln!(
            md,
            "| {release} | {build} | {gpus} | {} | {} | {} | `{}` | {} | {} | {} | {} | {sanitizer} | {examples} |",
            ids.join(", "),
            r.date,
            r.hardware,
            r.tree,
            cell.bins.len(),
            sum(|b| b.passed),
            sum(|b| b.failed),
            sum(|b| b.ignored),
        );
    }
    let _ = writeln!(
        md,
        "\n{} release × build × GPU-count cells; {} binaries or examples not passing; \
         {} binaries the dynamic loader could not start (exit 127).",
        cells.len(),
        failures.len(),
        not_started.len()
    );
    for f in &failures {
        let _ = writeln!(md, "- failed: {f}");
    }
    for f in &not_started {
        let _ = writeln!(
            md,
            "- could not start (it links functions of its headers' release that this driver \
             lacks; its loaded twin checks them): {f}"
        );
    }
    md.push_str("\n## Every run, newest first\n\n");
    for (i, r) in runs.iter().enumerate().rev() {
        let raw = if r.raw.is_empty() || !cited.contains(&i) {
            String::new()
        } else {
            let files: Vec<String> = r.raw.iter().map(|f| format!("`{f}`")).collect();
            format!(" Raw: {}.", files.join(", "))
        };
        let _ = writeln!(
            md,
            "- **Run {}**, {}: {}, driver {}, tree `{}`. {}{}: {}.{raw}",
            r.id,
            r.date,
            r.hardware,
            r.driver,
            r.tree,
            r.what[..1].to_uppercase(),
            &r.what[1..],
            r.result
        );
    }
    let files = cited
        .iter()
        .flat_map(|i| runs[*i].raw.iter().cloned())
        .collect();
    Ok((md, files))
}

/// `cargo xtask device-report [--check]`.
pub fn run(workspace: &Path, check: bool) -> Result<(), String> {
    let dir = workspace.join("records/device-runs");
    let index = std::fs::read_to_string(dir.join("runs.tsv"))
        .map_err(|e| format!("records/device-runs/runs.tsv: {e}"))?;
    let runs = read_index(&index)?;
    let (table, cited) = page(&runs, |f| {
        std::fs::read_to_string(dir.join(f)).map_err(|e| format!("records/device-runs/{f}: {e}"))
    })?;
    let mut stray = vec![];
    for e in std::fs::read_dir(&dir)
        .map_err(|e| e.to_string())?
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if name != "runs.tsv" && !cited.contains(&name) {
            stray.push(name);
        }
    }
    if !stray.is_empty() {
        return Err(format!(
            "records/device-runs/ holds files the table does not cite (delete them, and set their \
             run's raw field in runs.tsv to -): {}",
            stray.join(", ")
        ));
    }
    let path = workspace.join("docs/device-results.md");
    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    let (Some(a), Some(b)) = (text.find(BEGIN), text.find(END)) else {
        return Err(format!(
            "docs/device-results.md lacks the marks {BEGIN} and {END}"
        ));
    };
    let new = format!("{}{BEGIN}\n\n{table}\n{}", &text[..a], &text[b..]);
    if check {
        return if new == text {
            Ok(())
        } else {
            Err("docs/device-results.md is not what `cargo xtask device-report` makes of records/device-runs/: run it".into())
        };
    }
    std::fs::write(&path, new).map_err(|e| e.to_string())?;
    println!(
        "docs/device-results.md: {} runs, table rewritten",
        runs.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUMMARY: &str = r#"{
  "date": "2026-11-23T20:00:00Z",
  "binaries": {
    "vmm": {"exit": 0, "passed": 17, "failed": 0, "ignored": 1, "seconds": 22},
    "tensor_map": {"exit": 101, "passed": 7, "failed": 1, "ignored": 0, "seconds": 1}
  },
  "examples": {
    "demo": {"exit": 0, "last": "OK: one effect per group, as documented"},
    "vmm": {"exit": 77, "last": "skipped: \"x\" has no peer"},
    "tensor_map": {"exit": 1, "last": "FAILED: cuTensorMapEncodeTiled returned 1"}
  }
}
"#;

    /// A sanitizer-only run of the loaded build gives its verdict to the
    /// loaded cell; the wrong twin, the linked build's run, to the linked one.
    #[test]
    fn a_sanitizer_run_goes_to_the_build_of_its_binaries() {
        let run = |bin: &str| {
            format!(
                "{{\n  \"gpus\": 2,\n  \"headers\": \"CUDA 13.0 headers\",\n  \"binaries\": {{\n\n  }},\n  \"sanitizer\": {{\n    \"memcheck\": {{\n      \"{bin}\": {{\"exit\": 0, \"errors\": 0}}\n    }},\n    \"bar\": \"met\"\n  }}\n}}\n"
            )
        };
        let builds = |t: &str| -> Vec<(String, bool)> {
            parts(t)
                .into_iter()
                .map(|(_, b, _, _, _, bar)| (b, bar.is_some()))
                .collect()
        };
        assert_eq!(builds(&run("vmm-loaded")), [("loaded".to_string(), true)]);
        assert_eq!(builds(&run("vmm")), [("linked".to_string(), true)]);
        // Both builds under the tool: the verdict is each one's.
        let both = run("vmm").replace(
            "\"vmm\": {",
            "\"vmm\": {\"exit\": 0},\n      \"vmm-loaded\": {",
        );
        assert_eq!(
            builds(&both),
            [("linked".to_string(), true), ("loaded".to_string(), true)]
        );
    }

    #[test]
    fn a_summary_parses_into_binaries_and_examples() {
        let (bins, ex) = parse_summary(SUMMARY);
        assert_eq!(bins.len(), 2);
        assert_eq!(
            bins[0],
            BinaryRun {
                name: "vmm".into(),
                exit: 0,
                passed: 17,
                failed: 0,
                ignored: 1,
                seconds: 22
            }
        );
        assert_eq!((bins[1].exit, bins[1].failed), (101, 1));
        assert_eq!(ex.len(), 3);
        assert_eq!(ex[1].last, "skipped: \"x\" has no peer");
        assert_eq!(ex[2].exit, 1);
    }

    const OLD: &str = "== o1/12.0/linked/summary.json\n{\n  \"gpus\": 1,\n  \"binaries\": {\n    \
        \"vmm\": {\"exit\": 0, \"passed\": 17, \"failed\": 0, \"ignored\": 1, \"seconds\": 2},\n    \
        \"tensor_map\": {\"exit\": 101, \"passed\": 7, \"failed\": 1, \"ignored\": 0, \"seconds\": 1}\n  },\n  \
        \"examples\": {\n    \"demo\": {\"exit\": 0, \"last\": \"OK: demo\"}\n  }\n}\n";
    const RERUN: &str = "== o2/12.0/linked/summary.json\n{\n  \"gpus\": 1,\n  \"binaries\": {\n    \
        \"tensor_map\": {\"exit\": 0, \"passed\": 8, \"failed\": 0, \"ignored\": 0, \"seconds\": 1}\n  },\n  \
        \"examples\": {\n  }\n}\n";
    const BUNDLE: &str = "{\n  \"gpus\": 2,\n  \"headers\": \"CUDA 13.0 headers from x\",\n  \"binaries\": {\n    \
        \"vmm\": {\"exit\": 0, \"passed\": 18, \"failed\": 0, \"ignored\": 0, \"seconds\": 2},\n    \
        \"vmm-loaded\": {\"exit\": 0, \"passed\": 18, \"failed\": 0, \"ignored\": 0, \"seconds\": 2},\n    \
        \"vmm-ptds\": {\"exit\": 0, \"passed\": 2, \"failed\": 0, \"ignored\": 0, \"seconds\": 2}\n  },\n  \
        \"examples\": {\n  },\n  \"sanitizer\": {\n    \"bar\": \"met\"\n  }\n}\n";

    fn index(lines: &[&str]) -> Vec<Run> {
        read_index(&lines.join("\n")).unwrap()
    }

    fn table(runs: &[Run]) -> (String, BTreeSet<String>) {
        page(runs, |f| {
            Ok(match f {
                "old" => OLD,
                "rerun" => RERUN,
                "bundle" => BUNDLE,
                _ => return Err(format!("no {f}")),
            }
            .to_string())
        })
        .unwrap()
    }

    #[test]
    fn the_table_has_each_cells_newest_results_and_cites_their_runs() {
        let runs = index(&[
            "# comment",
            "1\t2026-01-01\tNVIDIA H100\t580\taaaaaaa\told\tthe matrix\tone failure",
            "2\t2026-01-02\tNVIDIA H200\t580\tbbbbbbb\trerun\ttensor_map again\t0 failed",
            "3\t2026-01-03\t2 × NVIDIA H200\t580\tccccccc\tbundle\tthe suite\t0 failed",
            "4\t2026-01-04\tNVIDIA H100\t580\tddddddd\t-\ta probe\tfacts",
        ]);
        let (md, cited) = table(&runs);
        // vmm from run 1, tensor_map from run 2's re-run: 25 passed, 0 failed;
        // date, hardware and tree of the newest run (2).
        assert!(
            md.contains("| 12.0 | linked | 1 | 2, 1 | 2026-01-02 | NVIDIA H200 | `bbbbbbb` | 2 | 25 | 0 | 1 | — | 1 / 1 |"),
            "{md}"
        );
        // A bundle's suffixes name its builds; its sanitizer verdict goes with linked.
        assert!(md.contains("| 13.0 | linked | 2 | 3 | 2026-01-03 | 2 × NVIDIA H200 | `ccccccc` | 1 | 18 | 0 | 0 | met (run 3) |"), "{md}");
        assert!(md.contains("| 13.0 | loaded | 2 | 3 |"), "{md}");
        assert!(md.contains("| 13.0 | linked-ptds | 2 | 3 |"), "{md}");
        assert!(md.contains("0 binaries or examples not passing"), "{md}");
        assert!(
            md.contains(
                "- **Run 4**, 2026-01-04: NVIDIA H100, driver 580, tree `ddddddd`. A probe: facts."
            ),
            "{md}"
        );
        assert_eq!(cited, ["bundle", "old", "rerun"].map(String::from).into());
        // The wrong twin: without the re-run, run 1's failure stands.
        let (md, _) = table(&runs[..1]);
        assert!(
            md.contains(
                "| 12.0 | linked | 1 | 1 | 2026-01-01 | NVIDIA H100 | `aaaaaaa` | 2 | 24 | 1 | 1 |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "- failed: 12.0 linked, 1 GPU(s): `tensor_map` (run 1): exit 101, 1 failed"
            ),
            "{md}"
        );
        // A line with a field missing is refused, not skipped.
        assert!(read_index("1\t2026-01-01\tH100").is_err());
    }

    #[test]
    fn the_committed_page_is_what_the_recorded_runs_make() {
        run(&crate::cmd::workspace(), true).unwrap();
    }
}
