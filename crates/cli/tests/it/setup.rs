//! The README's setup against `.ci/deps`: the quick start installs only what building and
//! running needs (no browser), the tests' command adds `--tests`, and every package the
//! script may install is named in the README. And one build of the dependencies serves the
//! binary, the examples and the tests: every crate has the same features in each.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn repo_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The `.ci/deps` command lines of the README's `sh` blocks under "Quick start", in order.
fn quick_start_commands(readme: &str) -> Vec<&str> {
    let start = readme.find("## Quick start").expect("the README has a quick start");
    let section = &readme[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |end| end + 3)];
    section.lines().filter(|line| line.starts_with("bash .ci/deps")).collect()
}

#[test]
fn quick_start_installs_no_browser_and_the_readme_names_every_package() {
    let readme = repo_file("README.md");
    let deps = repo_file(".ci/deps");
    let commands = quick_start_commands(&readme);
    assert_eq!(commands.len(), 2, "the quick start runs .ci/deps to run and to test: {commands:?}");
    assert!(commands[0].starts_with("bash .ci/deps &&"), "running needs no --tests: {commands:?}");
    assert!(
        commands[1].starts_with("bash .ci/deps --tests &&"),
        "tests need --tests: {commands:?}"
    );
    assert!(commands[1].contains("cargo test"), "{commands:?}");

    // Each package the script may install, with the line that decides it.
    let packages: Vec<(&str, &str)> = deps
        .lines()
        .filter_map(|line| Some((line.split_once("need+=(")?.1.split_once(')')?.0, line)))
        .collect();
    assert!(packages.len() >= 4, "packages in .ci/deps: {packages:?}");
    for (package, line) in &packages {
        assert!(readme.contains(&format!("`{package}`")), "the README does not name {package}");
        if *package == "chromium" {
            assert!(line.contains("$tests"), "chromium only with --tests: {line}");
        }
    }
    assert!(packages.iter().any(|(p, _)| *p == "chromium"), "{packages:?}");
}

/// Each package of a build (`cargo tree` with `edges`, for the packages `select`) and the
/// features it is built with (for build scripts and proc-macros, and for the rest: a set).
fn feature_sets(select: &[&str], edges: &str) -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new(env!("CARGO"))
        .current_dir(&root)
        .args(["tree", "--offline", "--locked", "--prefix", "none", "-f", "{p}|{f}", "-e", edges])
        .args(select)
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "cargo tree: {}", String::from_utf8_lossy(&out.stderr));
    let mut sets: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let Some((package, features)) = line.trim_end_matches(" (*)").split_once('|') else {
            continue;
        };
        // `name vX.Y.Z` (a path package adds its directory).
        let package = package.split(' ').take(2).collect::<Vec<_>>().join(" ");
        sets.entry(package).or_default().insert(features.to_owned());
    }
    sets
}

#[test]
fn run_examples_and_tests_share_one_build_of_the_dependencies() {
    // What `cargo run -p etcdlat-cli`, `cargo run --example embed` (and the benches) and
    // `cargo test --workspace` build: a crate built with other features in one of them is
    // a second build of it and of everything above it.
    let builds = [
        ("cargo run -p etcdlat-cli", feature_sets(&["-p", "etcdlat-cli"], "normal,build")),
        ("the examples", feature_sets(&["-p", "etcdlat"], "normal,build,dev")),
        ("cargo test --workspace", feature_sets(&["--workspace"], "normal,build,dev")),
    ];
    let mut differ = Vec::new();
    for (a, first) in &builds {
        for (b, second) in &builds {
            for (package, features) in first {
                if let Some(theirs) = second.get(package).filter(|theirs| *theirs != features) {
                    differ.push(format!("{package}: {features:?} in {a}, {theirs:?} in {b}"));
                }
            }
        }
    }
    assert!(
        differ.is_empty(),
        "add the union to Cargo.toml's feature pins:\n{}",
        differ.join("\n")
    );
    assert!(builds.iter().all(|(_, b)| b.len() > 100), "whole trees read");
}
