//! NVIDIA's Doxygen comments, turned into Markdown that rustdoc renders (and
//! does not mistake for links, HTML or doctests).

use std::collections::BTreeSet;

/// What NVIDIA's Doxygen aliases (`\notefnerr` and friends) stand for, in
/// our words: their text is in NVIDIA's documentation build, not the headers.
const NOTE_ALIASES: [(&str, &str); 9] = [
    ("\\notefnerr", "May also return an error code of an earlier asynchronous launch."),
    ("\\note_async", "Asynchronous in most cases."),
    ("\\note_sync", "Synchronous in most cases."),
    ("\\note_null_stream", "The default stream has its usual semantics here."),
    ("\\note_memset", "See NVIDIA's reference on how memset synchronises."),
    ("\\note_init_rt", "Where it initialises the runtime, may also return `cudaErrorInitializationError`, `cudaErrorInsufficientDriver` or `cudaErrorNoDevice`."),
    ("\\note_callback", "May also return `cudaErrorNotPermitted` when called from a stream callback."),
    ("\\note_graph_thread_safety", "Graph objects are not synchronised internally."),
    ("\\note_string_api_deprecation", "The form naming a symbol by a string is deprecated."),
];

/// Converts one doc comment. `known` holds the crate's item names, which
/// become intra-doc links where the comment writes `::name`.
pub fn convert(text: &str, known: &BTreeSet<String>) -> String {
    let text = strip_manbrief(text);
    let mut out: Vec<String> = vec![];
    let mut in_code = false;
    for raw in text.lines() {
        let line = raw.trim();
        if in_code {
            if line.starts_with("\\endcode") {
                out.push("```".into());
                in_code = false;
            } else {
                out.push(raw.strip_prefix(' ').unwrap_or(raw).to_string());
            }
            continue;
        }
        if line.starts_with("\\code") {
            out.push("```text".into());
            in_code = true;
            continue;
        }
        if [
            "\\defgroup",
            "\\ingroup",
            "\\anchor",
            "@{",
            "@}",
            "\\addtogroup",
        ]
        .iter()
        .any(|p| line.starts_with(p))
        {
            continue;
        }
        out.push(convert_line(line, known));
    }
    if in_code {
        out.push("```".into());
    }
    let mut s = String::from(" ");
    s.push_str(out.join("\n ").trim());
    while s.contains("\n \n \n") {
        s = s.replace("\n \n \n", "\n \n");
    }
    s
}

fn strip_manbrief(text: &str) -> String {
    match (text.find("___MANBRIEF___"), text.find("___ENDMANBRIEF___")) {
        (Some(a), Some(b)) if a < b => {
            format!("{}{}", &text[..a], &text[b + "___ENDMANBRIEF___".len()..])
        }
        _ => text.to_string(),
    }
}

fn convert_line(line: &str, known: &BTreeSet<String>) -> String {
    for (alias, note) in NOTE_ALIASES {
        if line == alias {
            return format!("**Note:** {note}");
        }
    }
    if line.starts_with("\\note_") {
        return String::new();
    }
    let (prefix, rest) = if let Some(r) = strip_command(line, &["\\brief", "\\details"]) {
        ("", r)
    } else if let Some(r) = strip_command(
        line,
        &["\\param[in,out]", "\\param[out]", "\\param[in]", "\\param"],
    ) {
        let (name, desc) = r.split_once(char::is_whitespace).unwrap_or((r, ""));
        let desc = desc.trim_start().trim_start_matches('-').trim_start();
        return format!("* `{name}` - {}", inline(desc, known));
    } else if let Some(r) = strip_command(line, &["\\returns", "\\return", "\\retval"]) {
        ("# Returns\n ", r)
    } else if let Some(r) = strip_command(line, &["\\sa"]) {
        ("# See also\n ", r)
    } else if let Some(r) = strip_command(line, &["\\note"]) {
        ("**Note:** ", r)
    } else if let Some(r) = strip_command(line, &["\\deprecated"]) {
        ("**Deprecated:** ", r)
    } else {
        ("", line)
    };
    format!("{prefix}{}", inline(rest, known))
}

fn strip_command<'a>(line: &'a str, commands: &[&str]) -> Option<&'a str> {
    commands.iter().find_map(|c| {
        let r = line.strip_prefix(c)?;
        (r.is_empty() || r.starts_with(char::is_whitespace)).then(|| r.trim_start())
    })
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The bytes [`inline`] may have to convert (all ASCII, so every other run of
/// text is copied as it is): `::`, `\\`, URLs (`h`), Markdown and HTML.
const SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let special = b":\\h[]*_`#|<>&";
    let mut i = 0;
    while i < special.len() {
        t[special[i] as usize] = true;
        i += 1;
    }
    t
};

/// Inline markup: `::name` references, `\p`/`\e`/`\b`/`\c`, characters that
/// Markdown or rustdoc would misread.
fn inline(text: &str, known: &BTreeSet<String>) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        // Text with nothing to convert is copied in one piece (the build script
        // runs unoptimised: per-character work over NVIDIA's docs costs seconds).
        let plain = rest
            .as_bytes()
            .iter()
            .position(|&b| SPECIAL[b as usize])
            .unwrap_or(rest.len());
        if plain > 0 {
            out.push_str(&rest[..plain]);
            rest = &rest[plain..];
            continue;
        }
        if let Some(r) = rest.strip_prefix("::") {
            let n = r.find(|c| !is_ident_char(c)).unwrap_or(r.len());
            if n > 0 {
                let mut name = &r[..n];
                let mut after = &r[n..];
                // `::CUmemLocation::type`: a member; shown as code.
                let mut member = String::new();
                while let Some(m) = after.strip_prefix("::") {
                    let k = m.find(|c| !is_ident_char(c)).unwrap_or(m.len());
                    if k == 0 {
                        break;
                    }
                    member.push_str(&format!("::{}", &m[..k]));
                    after = &m[k..];
                }
                let call = after.starts_with("()");
                if call {
                    after = &after[2..];
                }
                let shown = format!("{name}{member}{}", if call { "()" } else { "" });
                if member.is_empty() && known.contains(name) {
                    out.push_str(&format!("[`{shown}`](crate::{name})"));
                } else {
                    name = &shown;
                    out.push_str(&format!("`{name}`"));
                }
                rest = after;
                continue;
            }
        }
        if c == '\\' {
            let r = &rest[1..];
            let cmd_len = r
                .find(|c: char| !c.is_ascii_alphabetic())
                .unwrap_or(r.len());
            let cmd = &r[..cmd_len];
            let after = r[cmd_len..].trim_start();
            let word_len = after
                .find(|c: char| c.is_whitespace() || c == ',' || c == ')')
                .unwrap_or(after.len());
            let word = &after[..word_len];
            let wrapped = match cmd {
                "p" | "c" | "a" => Some(format!("`{word}`")),
                "e" | "em" => Some(format!("*{word}*")),
                "b" => Some(format!("**{word}**")),
                "ref" => Some(format!("`{word}`")),
                _ => None,
            };
            if let Some(w) = wrapped.filter(|_| !word.is_empty()) {
                out.push_str(&w);
                rest = &after[word_len..];
                continue;
            }
            if cmd == "n" {
                out.push_str("  \n");
                rest = &r[1..];
                continue;
            }
        }
        if rest.starts_with("http://") || rest.starts_with("https://") {
            let n = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let url = rest[..n].trim_end_matches(['.', ',', ')']);
            out.push_str(&format!("<{url}>"));
            rest = &rest[url.len()..];
            continue;
        }
        match c {
            '[' | ']' | '*' | '_' | '`' | '#' | '|' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            _ => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    //! Each conversion on a small comment of its own; the pinned bindings
    //! (`generator/tests/pinned_output.rs`) use links, not these texts.

    use super::*;

    fn known() -> BTreeSet<String> {
        ["cuMemMap".to_string()].into_iter().collect()
    }

    fn line(text: &str) -> String {
        convert_line(text, &known())
    }

    #[test]
    fn the_man_page_brief_is_cut_only_between_its_two_markers() {
        let both = "a ___MANBRIEF___ x ___ENDMANBRIEF___b";
        assert_eq!(strip_manbrief(both), "a b");
        // The end before the start, or one marker alone: kept as written.
        let reversed = "a ___ENDMANBRIEF___ x ___MANBRIEF___ b";
        assert_eq!(strip_manbrief(reversed), reversed);
        assert_eq!(strip_manbrief("a ___MANBRIEF___ x"), "a ___MANBRIEF___ x");
        assert_eq!(strip_manbrief("x ___ENDMANBRIEF___"), "x ___ENDMANBRIEF___");
        assert_eq!(strip_manbrief("plain"), "plain");
    }

    #[test]
    fn commands_become_markdown() {
        assert_eq!(line("\\brief Maps memory."), "Maps memory.");
        assert_eq!(line("\\details More."), "More.");
        assert_eq!(
            line("\\param[in]  size - Size of the range"),
            "* `size` - Size of the range"
        );
        assert_eq!(line("\\param[out] ptr"), "* `ptr` - ");
        assert_eq!(line("\\param[in,out] p - x"), "* `p` - x");
        assert_eq!(line("\\param p x"), "* `p` - x");
        assert_eq!(line("\\returns Codes"), "# Returns\n Codes");
        assert_eq!(line("\\return Codes"), "# Returns\n Codes");
        assert_eq!(line("\\retval x"), "# Returns\n x");
        assert_eq!(line("\\sa cuMemMap"), "# See also\n cuMemMap");
        assert_eq!(line("\\note Careful"), "**Note:** Careful");
        assert_eq!(line("\\deprecated Gone"), "**Deprecated:** Gone");
        assert_eq!(
            line("\\notefnerr"),
            format!("**Note:** {}", NOTE_ALIASES[0].1)
        );
        assert_eq!(
            line("\\note_sync"),
            format!("**Note:** {}", NOTE_ALIASES[2].1)
        );
        assert_eq!(
            line("\\note_string_api_deprecation"),
            format!("**Note:** {}", NOTE_ALIASES[8].1)
        );
        // An alias NVIDIA adds later: dropped, its text is not in the headers.
        assert_eq!(line("\\note_new_alias"), "");
        // A command must end at a space: `\briefly` is a word.
        assert_eq!(line("\\briefly"), "\\\\briefly");
        assert_eq!(line("\\brief"), "");
    }

    #[test]
    fn references_become_links_or_code() {
        assert_eq!(
            inline("see ::cuMemMap.", &known()),
            "see [`cuMemMap`](crate::cuMemMap)."
        );
        assert_eq!(
            inline("::cuMemMap()", &known()),
            "[`cuMemMap()`](crate::cuMemMap)"
        );
        assert_eq!(inline("::cuUnknown x", &known()), "`cuUnknown` x");
        assert_eq!(
            inline("::CUmemLocation::type::id, ", &known()),
            "`CUmemLocation::type::id`, "
        );
        // A member of a known name is code, not a link to the name.
        assert_eq!(inline("::cuMemMap::x", &known()), "`cuMemMap::x`");
        // `::` before no name, or a member's `::` before none: plain text.
        assert_eq!(inline(":: x", &known()), ":: x");
        assert_eq!(inline("::a:: b", &known()), "`a`:: b");
        assert_eq!(inline("a: b", &known()), "a: b");
    }

    #[test]
    fn inline_commands_wrap_the_word_after_them() {
        let k = known();
        assert_eq!(inline("\\p size, then", &k), "`size`, then");
        assert_eq!(inline("\\c x)", &k), "`x`)");
        assert_eq!(inline("\\a arg", &k), "`arg`");
        assert_eq!(inline("\\e very", &k), "*very*");
        assert_eq!(inline("\\em very", &k), "*very*");
        assert_eq!(inline("\\b bold", &k), "**bold**");
        assert_eq!(inline("\\ref group", &k), "`group`");
        assert_eq!(inline("a\\n b", &k), "a  \n b");
        // A wrapping command before no word, and an unknown command: escaped text.
        assert_eq!(inline("\\p ", &k), "\\\\p ");
        assert_eq!(inline("\\zz y", &k), "\\\\zz y");
    }

    #[test]
    fn urls_and_markup_are_kept_from_rustdoc() {
        let k = known();
        assert_eq!(inline("at http://x.org/a.", &k), "at <http://x.org/a>.");
        assert_eq!(inline("(https://x.org/b), c", &k), "(<https://x.org/b>), c");
        assert_eq!(inline("https://x.org/c,", &k), "<https://x.org/c>,");
        assert_eq!(inline("hello h", &k), "hello h");
        assert_eq!(
            inline("[a] *b* _c_ `d` #e |f| \\", &k),
            "\\[a\\] \\*b\\* \\_c\\_ \\`d\\` \\#e \\|f\\| \\\\"
        );
        assert_eq!(inline("a<b>&c", &k), "a&lt;b&gt;&amp;c");
        assert_eq!(inline("é ü", &k), "é ü");
    }

    #[test]
    fn a_comment_is_converted_line_by_line() {
        let text = "\\brief Maps.\n\
                    \\defgroup G\n\\ingroup G\n\\anchor A\n@{\n@}\n\\addtogroup G\n\
                    \n\n\n\n\
                    \\code\n  int x;\n\\endcode\n\
                    after";
        assert_eq!(
            convert(text, &known()),
            " Maps.\n \n ```text\n  int x;\n ```\n after"
        );
        // A code block left open is closed.
        assert_eq!(convert("\\code\nx", &known()), " ```text\n x\n ```");
        // The man-page brief goes before anything is converted.
        assert_eq!(
            convert("___MANBRIEF___ b ___ENDMANBRIEF___a", &known()),
            " a"
        );
    }
}
