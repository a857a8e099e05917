//! The README's setup against `.ci/deps`: the quick start installs only what building and
//! running needs (no browser), the tests' command adds `--tests`, and every package the
//! script may install is named in the README.

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
