//! The API groups of NVIDIA's reference (`\defgroup CUDA_VA Virtual Memory
//! Management ... @{ ... @}`), read from the headers as preprocessed with
//! their comments kept, so each function lands in the group that declares it.

use std::collections::BTreeSet;

pub struct Group {
    /// Doxygen id: `CUDA_VA`, `CUDART_MEMORY_POOLS`.
    pub id: String,
    pub title: String,
    pub description: String,
    /// Symbols declared inside the group, in header order.
    pub functions: Vec<String>,
    /// Symbols the group's page also documents, which are not among
    /// `functions` (the group module re-exports those): declared in a region
    /// that `\addtogroup <id> @{` reopens (the runtime's `cudaGetDeviceCount`,
    /// after a first declaration in the device runtime's header outside every
    /// group). `links.rs` links their docs to this group's page.
    pub also_documented: Vec<String>,
}

impl Group {
    /// `driver` for `CUDA_*` groups, `runtime` for `CUDART_*`.
    pub fn api(&self) -> &'static str {
        if self.id.starts_with("CUDART") {
            "runtime"
        } else {
            "driver"
        }
    }

    /// `virtual_memory_management`, from the title.
    pub fn module_name(&self) -> String {
        // The 13.x headers spell one title "Tensor Map Object Managment".
        let title = self.title.replace("Managment", "Management");
        let mut name = String::new();
        for c in title.chars() {
            if c.is_ascii_alphanumeric() {
                name.push(c.to_ascii_lowercase());
            } else if !name.ends_with('_') && !name.is_empty() {
                name.push('_');
            }
        }
        let name = name.trim_end_matches('_').to_string();
        if name.starts_with(|c: char| c.is_ascii_digit()) {
            format!("_{name}")
        } else {
            name
        }
    }
}

/// Groups with the functions of `declared` they hold (first declaration wins).
pub fn find(preprocessed: &str, declared: &BTreeSet<String>) -> Vec<Group> {
    let mut groups: Vec<Group> = vec![];
    let mut open: Vec<usize> = vec![];
    let mut seen = BTreeSet::new();
    let mut grouped = BTreeSet::new();
    // The group an `\addtogroup` reopens, up to its `@}`: for `also_documented` only.
    let mut reopened: Option<usize> = None;
    let bytes = preprocessed.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if preprocessed[i..].starts_with("/*") {
            let end = preprocessed[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |e| i + 2 + e + 2);
            let comment = &preprocessed[i..end];
            if let Some(g) = defgroup(comment) {
                groups.push(g);
                if comment.contains("@{") {
                    open.push(groups.len() - 1);
                }
            } else if comment.contains("@}") {
                open.pop();
                reopened = None;
            } else if let Some(id) = addtogroup(comment).filter(|_| comment.contains("@{")) {
                reopened = groups.iter().position(|g| g.id == id);
            }
            i = end;
        } else if preprocessed[i..].starts_with("//") {
            i = preprocessed[i..].find('\n').map_or(bytes.len(), |e| i + e);
        } else if bytes[i] == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if bytes[i].is_ascii_alphabetic() || bytes[i] == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let ident = &preprocessed[start..i];
            let next = preprocessed[i..].trim_start().starts_with('(');
            if next && declared.contains(ident) {
                let first = seen.insert(ident.to_string());
                match (open.last(), reopened) {
                    (Some(&g), _) if first => groups[g].functions.push(ident.to_string()),
                    (Some(&g), _) | (None, Some(g)) if !grouped.contains(ident) => {
                        groups[g].also_documented.push(ident.to_string())
                    }
                    _ => {}
                }
                if open.last().or(reopened.as_ref()).is_some() {
                    grouped.insert(ident.to_string());
                }
            }
        } else {
            i += 1;
        }
    }
    groups.retain(|g| !g.functions.is_empty());
    groups
}

/// The id of `\addtogroup <id>`.
fn addtogroup(comment: &str) -> Option<&str> {
    let at = comment.find("\\addtogroup")?;
    comment[at + "\\addtogroup".len()..]
        .split_whitespace()
        .next()
}

fn defgroup(comment: &str) -> Option<Group> {
    let at = comment.find("\\defgroup")?;
    let line_end = comment[at..].find('\n').map_or(comment.len(), |e| at + e);
    let mut words = comment[at + "\\defgroup".len()..line_end].split_whitespace();
    let id = words.next()?.to_string();
    let title = words.collect::<Vec<_>>().join(" ");
    // The comment's lines without their ` * ` margin (a code block's own
    // indentation kept); `docs::convert` drops the `@{` and `\ingroup` lines.
    let description = comment[line_end..]
        .trim_end_matches("*/")
        .lines()
        .map(|l| l.trim().trim_start_matches('*').trim_end())
        .collect::<Vec<_>>()
        .join("\n");
    Some(Group {
        id,
        title,
        description,
        functions: vec![],
        also_documented: vec![],
    })
}

#[cfg(test)]
mod tests {
    //! The group reader on a small preprocessed text of its own: what a
    //! comment, a string literal or a reopened group does to it (the pinned
    //! headers have no string literal that names a function).

    use super::*;

    const TEXT: &str = r#"
/**
 * \defgroup CUDA_VA Virtual   Memory Management
 * What it does.
 * \ingroup CUDA_DRIVER
 * @{
 */
CUresult cuMemMap(int a);
static const char *s = "cuFake( \" /* \defgroup CUDA_X X @{ */";
CUresult cuMemUnmap (void);
// cuLineComment(
int cuNotCalled;
CUresult cuMemMap(int a);
/** @} */
CUresult cuOutside(void);
/** \defgroup CUDA_EMPTY Empty @{ */
/** @} */
/** \addtogroup CUDA_VA @{ */
CUresult cuMemMap(int a);
CUresult cuOutside(void);
/** @} */
CUresult cuAfter(void);
"#;

    fn declared() -> BTreeSet<String> {
        [
            "cuMemMap",
            "cuMemUnmap",
            "cuOutside",
            "cuFake",
            "cuLineComment",
            "cuNotCalled",
            "cuAfter",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    #[test]
    fn functions_land_in_the_group_that_declares_them() {
        let groups = find(TEXT, &declared());
        // The empty group is dropped; the string's and the line comment's
        // names are no declarations; a function declared twice is listed once.
        assert_eq!(
            groups.len(),
            1,
            "{:?}",
            groups.iter().map(|g| &g.id).collect::<Vec<_>>()
        );
        let g = &groups[0];
        assert_eq!(g.id, "CUDA_VA");
        assert_eq!(g.title, "Virtual Memory Management");
        assert_eq!(
            g.description,
            "\n What it does.\n \\ingroup CUDA_DRIVER\n @{\n"
        );
        // What the module's documentation says of it: the text alone.
        assert_eq!(
            super::super::docs::convert(&g.description, &BTreeSet::new()),
            " What it does."
        );
        assert_eq!(g.functions, ["cuMemMap", "cuMemUnmap"]);
        // First declared outside every group, then in the reopened group.
        assert_eq!(g.also_documented, ["cuOutside"]);
        assert_eq!(g.api(), "driver");
        assert_eq!(g.module_name(), "virtual_memory_management");
    }

    #[test]
    fn a_string_runs_to_its_closing_quote_past_escaped_ones() {
        // Unterminated: the reader stops at the end, nothing found after.
        assert!(find("/** \\defgroup CUDA_A A @{ */ \"cuMemMap(", &declared()).is_empty());
        // A text ending in a name (no call): read to its end, nothing found.
        assert!(find("/** \\defgroup CUDA_A A @{ */ cuMemMap", &declared()).is_empty());
        // An escaped quote does not end the string.
        let text = "/** \\defgroup CUDA_A A @{ */ \"\\\" cuFake(\" cuMemMap(";
        let groups = find(text, &declared());
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].functions, ["cuMemMap"]);
    }

    #[test]
    fn module_names_and_apis() {
        let group = |id: &str, title: &str| Group {
            id: id.into(),
            title: title.into(),
            description: String::new(),
            functions: vec![],
            also_documented: vec![],
        };
        assert_eq!(
            group("CUDA_TENSOR_MEMORY", "Tensor Map Object Managment").module_name(),
            "tensor_map_object_management"
        );
        assert_eq!(
            group("CUDA_X", "  C++ API -- Routines ").module_name(),
            "c_api_routines"
        );
        assert_eq!(group("CUDA_X", "3D Arrays").module_name(), "_3d_arrays");
        let runtime = group("CUDART_MEMORY_POOLS", "Stream Ordered Memory Allocator");
        assert_eq!(runtime.api(), "runtime");
        assert_eq!(runtime.module_name(), "stream_ordered_memory_allocator");
    }
}
