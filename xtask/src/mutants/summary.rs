//! `--summary`: the per-file table of finished runs (docs/mutation-testing.md).

use super::groups::normal;
use std::collections::BTreeMap;
use std::path::Path;

/// Per file: mutants, caught, missed, unviable, timeouts, over the runs'
/// output folders (cargo-mutants' `caught.txt`, `missed.txt`,
/// `unviable.txt`, `timeout.txt`, one mutant a line `file:line:col: what`),
/// as a Markdown table; then every missed and timed-out mutant.
pub fn summary(dirs: &[&str]) -> Result<String, String> {
    const KINDS: [&str; 5] = [
        "caught",
        "missed",
        "unviable",
        "timeout",
        "previously_caught",
    ];
    let mut per_file: BTreeMap<String, [usize; 5]> = BTreeMap::new();
    let mut survivors = vec![];
    for dir in dirs {
        let dir = Path::new(dir);
        // cargo-mutants writes into `mutants.out` under --output.
        let dir = if dir.join("mutants.out").is_dir() {
            dir.join("mutants.out")
        } else {
            dir.to_path_buf()
        };
        // An `--iterate` run's skipped mutants (`previously_caught.txt`):
        // those an earlier run into the folder caught *or found unviable*
        // (cargo-mutants' `load_previously_caught` reads both files), so
        // counted apart, never as caught.
        let files = KINDS
            .iter()
            .enumerate()
            .map(|(k, kind)| (k, format!("{kind}.txt")));
        for (k, file) in files {
            let kind = KINDS[k];
            let Ok(text) = std::fs::read_to_string(dir.join(&file)) else {
                continue;
            };
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let line = normal(line);
                let file = line.split(':').next().unwrap_or_default().to_string();
                per_file.entry(file).or_default()[k] += 1;
                if k == 1 || k == 3 {
                    survivors.push(format!("{kind}: {line}"));
                }
            }
        }
    }
    let mut t = String::from(
        "| file | mutants | caught | missed | unviable | timeouts | skipped (`--iterate`: caught or unviable before) | caught of viable run |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for (file, [c, m, u, to, before]) in &per_file {
        let viable = c + m + to;
        let share = if viable == 0 {
            "-".to_string()
        } else {
            format!("{:.0} %", 100.0 * *c as f64 / viable as f64)
        };
        t.push_str(&format!(
            "| `{file}` | {} | {c} | {m} | {u} | {to} | {before} | {share} |\n",
            c + m + u + to + before
        ));
    }
    t.push('\n');
    for s in survivors {
        t.push_str(&s);
        t.push('\n');
    }
    Ok(t)
}
