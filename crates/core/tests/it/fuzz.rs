//! The scenario parser, fuzzed with proptest: arbitrary text, TOML-shaped text, and every
//! shipped scenario mutated (bytes cut, tokens inserted, values replaced, lines repeated).
//! It never panics; an error always says where (line and column) or which field; a scenario
//! it accepts is valid, expands, scales and reads back from its own TOML.

use etcdlat_core::{Scenario, ScenarioError};
use proptest::prelude::*;
use proptest::test_runner::Config;

/// Every shipped scenario, and one with every kind of fault step.
fn valid_texts() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/scenarios");
    let mut texts: Vec<String> = std::fs::read_dir(dir)
        .expect("the shipped scenarios")
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).expect("a shipped scenario"))
        .collect();
    texts.sort();
    texts.push(
        r#"name = "faults"
[cluster]
members = 3
[load]
clients = 10
duration = "10s"
[op.put]
val-size = "1KiB"
key-space-size = 1000
[[faults]]
at = "1s"
action = "pause"
member = "leader"
for = "500ms"
[[faults]]
at = "2s"
action = "kill"
member = "follower:2"
[[faults]]
at = "3s"
action = "restart"
[[faults]]
at = "4s"
action = "move-leader"
member = "m0"
[[faults]]
at = "5s"
action = "compact"
[[faults]]
at = "6s"
action = "defrag"
"#
        .to_owned(),
    );
    texts
}

/// Tokens a mutation inserts or puts in place of a value: edge values, wrong types, TOML
/// syntax.
const TOKENS: &[&str] = &[
    "0",
    "-1",
    "1",
    "18446744073709551616",
    "-9223372036854775809",
    "1e400",
    "nan",
    "inf",
    "\"\"",
    "\"0s\"",
    "\"-3s\"",
    "\"999999999999999h\"",
    "\"1MiB\"",
    "\"1 parsec\"",
    "true",
    "[]",
    "[[]]",
    "{}",
    "{ a = 1 }",
    "\"leader\"",
    "\"follower:0\"",
    "\"m99\"",
    "\"kill\"",
    "=",
    "[",
    "]",
    "[[faults]]",
    "[op.put]",
    "[matrix]",
    "\"load.clients\" = [0]",
    "\n",
    "#",
    "'''",
    "\"\\u0000\"",
    "1979-05-27T07:32:00Z",
    "0x10",
    "1_000",
    "+1",
];

/// Text to insert: a token or arbitrary characters.
fn insertion() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(TOKENS).prop_map(str::to_owned),
        any::<String>(),
        "[a-z.\\-]{1,12} = [0-9a-z\"\\[\\]{}]{0,8}\n",
    ]
}

/// One edit of a text, at positions given as fractions of its length.
#[derive(Debug, Clone)]
enum Mutation {
    Cut(f64, usize),
    Insert(f64, String),
    ReplaceValue(f64, String),
    RepeatLine(f64),
    DropLine(f64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = 0.0..1.0f64;
    prop_oneof![
        (at.clone(), 1..40usize).prop_map(|(a, n)| Mutation::Cut(a, n)),
        (at.clone(), insertion()).prop_map(|(a, t)| Mutation::Insert(a, t)),
        (at.clone(), proptest::sample::select(TOKENS))
            .prop_map(|(a, t)| Mutation::ReplaceValue(a, t.to_owned())),
        at.clone().prop_map(Mutation::RepeatLine),
        at.prop_map(Mutation::DropLine),
    ]
}

/// The char boundary nearest below `fraction` of `text`'s length.
fn boundary(text: &str, fraction: f64) -> usize {
    let mut i = ((text.len() as f64) * fraction) as usize;
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i.min(text.len())
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut out = text.to_owned();
    match m {
        Mutation::Cut(a, n) => {
            let start = boundary(&out, *a);
            let mut end = (start + n).min(out.len());
            while !out.is_char_boundary(end) {
                end += 1;
            }
            out.replace_range(start..end, "");
        }
        Mutation::Insert(a, t) => out.insert_str(boundary(&out, *a), t),
        Mutation::ReplaceValue(a, t) => {
            // The value of the line at `a`: what follows its first " = ".
            let lines: Vec<&str> = out.lines().collect();
            let i = ((lines.len() as f64) * a) as usize % lines.len().max(1);
            let mut lines: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
            if let Some(line) = lines.get_mut(i)
                && let Some((key, _)) = line.split_once(" = ")
            {
                *line = format!("{key} = {t}");
            }
            out = lines.join("\n");
        }
        Mutation::RepeatLine(a) | Mutation::DropLine(a) => {
            let mut lines: Vec<String> = out.lines().map(str::to_owned).collect();
            if !lines.is_empty() {
                let i = ((lines.len() as f64) * a) as usize % lines.len();
                if matches!(m, Mutation::RepeatLine(_)) {
                    let line = lines[i].clone();
                    lines.insert(i, line);
                } else {
                    lines.remove(i);
                }
            }
            out = lines.join("\n");
        }
    }
    out
}

/// What must hold for any text: no panic (the test would fail), an error located or
/// naming its field, and an accepted scenario usable.
fn check(text: &str) {
    match Scenario::from_toml_str(text) {
        Ok(s) => {
            // A matrix may complete its base (an `op` per case): its runs are what is valid.
            let runs = s.expand().unwrap_or_else(|e| panic!("accepted but not expandable: {e}"));
            for run in &runs {
                run.validate().unwrap_or_else(|e| panic!("accepted but invalid: {e}\n{text}"));
                for factor in [1e-9, 0.5, 3.0, 1e300] {
                    let _ = run.scaled(factor).validate();
                }
            }
            let written = toml::to_string(&s).expect("an accepted scenario writes as TOML");
            let back = Scenario::from_toml_str(&written)
                .unwrap_or_else(|e| panic!("does not read back: {e}\n{written}"));
            assert_eq!(back.expand().map(|r| r.len()).ok(), Some(runs.len()));
        }
        Err(ScenarioError::Parse { location, message }) => {
            assert!(!message.is_empty());
            assert!(location.is_some(), "a parse error without a location: {message}\n{text}");
        }
        Err(ScenarioError::Invalid { field, message, .. }) => {
            assert!(!field.is_empty() && !message.is_empty(), "{field}: {message}");
        }
        Err(other) => panic!("an error of a new kind: {other}"),
    }
}

proptest! {
    #![proptest_config(Config { cases: 512, failure_persistence: None, ..Config::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        check(&text);
    }

    #[test]
    fn toml_shaped_text_never_panics(
        text in "(\\[{1,2}[a-z.]{0,12}\\]{1,2}\n|[a-z.\\-]{1,14} = (\"[a-z0-9 :]{0,8}\"|[0-9\\-]{1,6}|\\[[0-9, \"a-z]{0,10}\\]|true|\\{[a-z =0-9]{0,10}\\})\n){0,14}"
    ) {
        check(&text);
    }

    #[test]
    fn mutated_shipped_scenarios_never_panic(
        pick in any::<proptest::sample::Index>(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let texts = valid_texts();
        let mut text = texts[pick.index(texts.len())].clone();
        for m in &mutations {
            text = apply(&text, m);
        }
        check(&text);
    }
}

#[test]
fn the_unmutated_texts_are_valid() {
    for text in valid_texts() {
        Scenario::from_toml_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    }
}
