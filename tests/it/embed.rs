//! The README's "Embedding in a test suite" as an embedder gets it: a crate generated in a
//! temp dir outside the workspace from the README's own blocks (its `[dev-dependencies]`,
//! pointed at this checkout, and its test file), tested with `cargo test`.
//!
//! Inside the workspace every build gets the root manifest's settings (a `[patch]`, the
//! feature pins of the root's dev-dependencies); an embedder's build gets none of them, so
//! only a crate of its own shows what an embedder gets. That crate takes the workspace's
//! `Cargo.lock` (the same versions, all downloaded already: it builds offline) and profiles,
//! and builds into the workspace's target dir, where every dependency the embedder builds
//! with the workspace's features is already built: the first run builds the few that differ
//! and etcdlat's own crates, later runs only the generated crate.

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The repository: the README, the manifest and the lock file, and what the embedder's path
/// dependency points at.
const CHECKOUT: &str = env!("CARGO_MANIFEST_DIR");

/// What marks a README block as one of the embedder's files: `<!-- embedder's PATH ... -->`
/// on the line right before the block.
const MARKER: &str = "<!-- embedder's ";

#[test]
fn the_readme_embedding_test_builds_and_passes_in_a_crate_outside_the_workspace() {
    if etcdlat_testkit::skip() {
        return;
    }
    let readme = fs::read_to_string(Path::new(CHECKOUT).join("README.md")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    assert!(!dir.path().starts_with(CHECKOUT), "{} is inside the workspace", dir.path().display());
    generate(dir.path(), &readme);

    let (built, build_time) = cargo(dir.path(), &["test", "--no-run", "--quiet"]);
    assert!(
        built.status.success(),
        "the README's embedding example does not build in a crate of its own:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let (ran, run_time) = cargo(dir.path(), &["test"]);
    let said = format!(
        "{}\n{}",
        String::from_utf8_lossy(&ran.stdout),
        String::from_utf8_lossy(&ran.stderr)
    );
    assert!(
        ran.status.success(),
        "the README's embedding test fails against {}:\n{said}",
        etcdlat_testkit::etcd_version()
    );
    let passed: u32 = said
        .lines()
        .filter_map(|l| {
            l.strip_prefix("test result: ok. ")?.split_once(" passed")?.0.parse::<u32>().ok()
        })
        .sum();
    assert!(passed >= 1, "no test ran:\n{said}");
    eprintln!("the embedder's crate: built in {build_time:.1?}, tested in {run_time:.1?}");
}

/// Writes the embedder's crate into `dir`: each of the README's marked blocks as its file
/// (the dependency lines completed into a manifest), and the workspace's lock file.
fn generate(dir: &Path, readme: &str) {
    let files = embedder_files(readme);
    let paths: Vec<&str> = files.iter().map(|(path, _)| path.as_str()).collect();
    assert!(
        paths.contains(&"Cargo.toml") && paths.iter().any(|p| p.starts_with("tests/")),
        "the README marks its dependency lines and a test file: {paths:?}"
    );
    for (path, text) in &files {
        let text = if path == "Cargo.toml" { manifest(text) } else { text.clone() };
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    fs::copy(Path::new(CHECKOUT).join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
}

/// The README's blocks marked as the embedder's files: (path in the crate, the block's text).
fn embedder_files(readme: &str) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for marked in readme.split(MARKER).skip(1) {
        let (comment, after) = marked.split_once("-->").expect("a marker ends with -->");
        let path = comment.split_whitespace().next().expect("a marker names a file");
        let block = after
            .strip_prefix("\n```")
            .and_then(|fenced| fenced.split_once('\n'))
            .and_then(|(_language, body)| body.split_once("\n```"))
            .unwrap_or_else(|| {
                panic!("the README's {path} is not a ``` block right below its marker")
            });
        files.push((path.to_owned(), format!("{}\n", block.0)));
    }
    files
}

/// The embedder's manifest: a package of its own, the README's dependency lines with the path
/// to this checkout, and the workspace's profiles, so that what it builds with the same
/// features as the workspace is the build already in the target dir.
fn manifest(dependencies: &str) -> String {
    let mut manifest: toml::Table =
        "package = { name = \"embedder\", version = \"0.1.0\", edition = \"2024\", publish = false }"
            .parse()
            .unwrap();
    let mut dependencies: toml::Table =
        dependencies.parse().expect("the README's dependency lines are TOML");
    let path = dependencies
        .get_mut("dev-dependencies")
        .and_then(|d| d.get_mut("etcdlat"))
        .and_then(|etcdlat| etcdlat.get_mut("path"))
        .expect("the README's [dev-dependencies] has etcdlat by path");
    *path = CHECKOUT.into();
    manifest.extend(dependencies);
    let workspace: toml::Table =
        fs::read_to_string(Path::new(CHECKOUT).join("Cargo.toml")).unwrap().parse().unwrap();
    manifest.extend(workspace.get_key_value("profile").map(|(k, v)| (k.clone(), v.clone())));
    toml::to_string(&manifest).unwrap()
}

/// `cargo <args>` in the generated crate: offline (the workspace's lock file names only what
/// its build downloaded), into the workspace's target dir. The `cargo test` running this test
/// holds no lock on it while tests run; another cargo building there makes this one wait.
fn cargo(dir: &Path, args: &[&str]) -> (Output, Duration) {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("target/tmp is in target");
    let mut command = Command::new(env!("CARGO"));
    command.args(args).arg("--offline").current_dir(dir).env("CARGO_TARGET_DIR", target);
    // What cargo set for this test about this package (CARGO_MANIFEST_DIR, CARGO_PKG_NAME,
    // ...) is not the environment the workspace was built in: build scripts that watch such
    // a variable (ring's) would be run again, and everything above them rebuilt, in this
    // build and then in the workspace's next one.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if CARGO_SETS_FOR_TESTS.iter().any(|set| name.starts_with(set)) {
            command.env_remove(&*name);
        }
    }
    let started = Instant::now();
    let output = command.stdin(Stdio::null()).output().expect("running cargo");
    (output, started.elapsed())
}

/// The beginnings of the environment variables cargo sets for a test about its package
/// (the Cargo book's "Environment variables Cargo sets for crates").
const CARGO_SETS_FOR_TESTS: [&str; 5] = [
    "CARGO_MANIFEST_",
    "CARGO_PKG_",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
];
