use super::layout::*;
use super::names::*;
use super::*;

#[test]
fn only_the_windows_on_arm_releases_are_taken() {
    let parse = |args: &[&str]| super::super::parse(args).map(|(_, r, _)| r);
    assert_eq!(
        parse(&["--target", WINARM, "--all"]).unwrap(),
        ["13.4", "13.5"]
    );
    assert_eq!(parse(&["--target", WINARM, "13.5"]).unwrap(), ["13.5"]);
    let early = parse(&["--target", WINARM, "13.0"]).unwrap_err();
    assert!(early.contains("Windows on Arm starts at 13.4"), "{early}");
    let fallback = parse(&["--target", WINARM, "fallback"]).unwrap_err();
    assert!(fallback.contains("fallback is not proven"), "{fallback}");
}

#[test]
fn the_ir_calls_are_read_as_facts() {
    let ir = "@.str = private unnamed_addr constant [5 x i8] c\"type\\00\", align 1\n\
              @.str.1 = private unnamed_addr constant [4 x i8] c\"a.b\\00\", align 1\n\
              \x20 call void @lc_fact(ptr noundef @.str, ptr noundef @.str.1, i64 noundef 16, \
              i64 noundef 8, i64 noundef -1)\n\
              declare void @lc_fact(ptr noundef, ptr noundef, i64 noundef, i64 noundef, i64 noundef)\n";
    let facts = ir_facts(ir).unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(
        (facts[0].kind.as_str(), facts[0].key.as_str()),
        ("type", "a.b")
    );
    assert_eq!(facts[0].values, [16, 8, u64::MAX]);
    // Wrong twin: an argument that is not a constant.
    let bad = ir.replace("i64 noundef 16", "i64 noundef %5");
    assert!(ir_facts(&bad).unwrap_err().contains("not constant"));
}

#[test]
fn the_rust_table_lines_become_asserts_with_c_numbers() {
    let table = "    let u = ::core::mem::MaybeUninit::<::k::S>::uninit();\n\
        out.push(Entry::new(\"type\", \"S\", format!(\"{} {}\", ::core::mem::size_of::<::k::S>(), ::core::mem::align_of::<::k::S>())));\n\
        field(out, \"S.a.b\", x, unsafe { ::core::ptr::addr_of!((*p).a.b) });\n\
        out.push(Entry::new(\"const\", \"P\", (::k::P as usize as i128).to_string()));\n";
    let mut bits = vec![];
    let rust = rust_facts(table, &mut bits).unwrap();
    assert!(bits.is_empty());
    assert_eq!(rust.len(), 3);
    assert_eq!(rust[1].expr, "a.b");
    assert!(rust[2].expr.contains("transmute"));
    let c = |kind: &str, key: &str, values| CFact {
        kind: kind.into(),
        key: key.into(),
        values,
    };
    let facts = [
        c("type", "S", [8, 4, 0]),
        c("field", "S.a.b", [4, 2, 2]),
        c("const", "P", [0, 1, 0]),
    ];
    let mut counts = Counts::default();
    let (text, problems) = layout_asserts(&rust, &facts, &mut counts).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    assert!(text.contains("size_of::<::k::S>() == 8 && ::core::mem::align_of::<::k::S>() == 4"));
    assert!(text.contains("offset(p, f) == 4 && size_at(f) == 2 && align_at(f) == 2"));
    // Wrong twins: a fact C lacks, one C says is not declared.
    let (_, problems) = layout_asserts(&rust, &facts[..2], &mut counts).unwrap();
    assert_eq!(problems, ["const P: not in the C half"]);
    let nodecl = [
        facts[0].clone(),
        facts[1].clone(),
        c("nodecl-const", "P", [0; 3]),
    ];
    let (_, problems) = layout_asserts(&rust, &nodecl, &mut counts).unwrap();
    assert_eq!(problems, ["const P: the headers do not declare it"]);
}

#[test]
fn the_names_header_has_ids_and_tags() {
    let h =
        names_header("# 1 \"x.h\"\ntypedef struct __declspec(align(8)) CUa_st { int x; } CUa;\n");
    assert!(
        h.contains("#define LC_ID_CUa 1") && h.contains("#define LC_STRUCT_CUa_st 1"),
        "{h}"
    );
    assert!(!h.contains("LC_STRUCT_align"), "{h}");
}
