//! The code map stays true: the claims ARCHITECTURE.md makes, held against the code. The
//! crates' manifests against the one-way graph it draws; the source files' imports against
//! the rule that files import down their layers, never in circles; the libraries' code
//! against the rule that only the binary prints, reads the environment or exits; every
//! source folder named in the map, every path it names there, every test it cites defined
//! where it says; every source file opening with its `//!` line; each `tests/it/main.rs`
//! index against its folder. Each test names every entry it finds wrong, not only the first.
//!
//! ARCHITECTURE.md's conventions, as these tests read them: a crate's section is the part
//! under a heading that names it in backticks (`` `crates/core` ``), up to the next heading
//! of its level or above, and paths in it are relative to the crate's `src/` (or to the
//! crate's folder, or the repository's root); elsewhere a path is relative to the root (or
//! to some crate's `src/`). A folder is named by its path and a trailing `/`. A test is
//! cited as `` `path/to/file.rs::test_name` ``, its path from the root.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The repository: the root package's folder.
fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let list = fs::read_dir(dir).unwrap_or_else(|e| panic!("listing {}: {e}", dir.display()));
    let mut paths: Vec<PathBuf> = list
        .map(|entry| entry.unwrap_or_else(|e| panic!("listing {}: {e}", dir.display())).path())
        .collect();
    paths.sort();
    paths
}

/// `path` from `base`, with `/` between its parts.
fn relative(path: &Path, base: &Path) -> String {
    let rest = path
        .strip_prefix(base)
        .unwrap_or_else(|_| panic!("{} outside {}", path.display(), base.display()));
    rest.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
}

/// The folders (`""` for `root` itself) and `.rs` files under `root`, relative to it.
fn walk(root: &Path) -> (Vec<String>, Vec<String>) {
    let (mut folders, mut files) = (vec![String::new()], Vec::new());
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for path in entries(&dir) {
            if path.is_dir() {
                folders.push(relative(&path, root));
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(relative(&path, root));
            }
        }
    }
    folders.sort();
    files.sort();
    (folders, files)
}

/// The crates of the workspace: their folders under `crates/`.
fn crates() -> Vec<PathBuf> {
    entries(&repo().join("crates")).into_iter().filter(|p| p.join("src").is_dir()).collect()
}

/// The text in backticks of `text`.
fn code_spans(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// One part of ARCHITECTURE.md: a heading's line and the lines after it up to the next
/// heading, its fenced blocks (the diagrams) blanked out.
struct Part {
    heading: String,
    text: String,
    /// The folder of the crate whose section the part is in.
    krate: Option<PathBuf>,
}

/// ARCHITECTURE.md, in parts.
fn code_map() -> Vec<Part> {
    let crates = crates();
    let mut parts: Vec<Part> = Vec::new();
    // The open crate sections' heading levels and crates, outermost first.
    let mut open: Vec<(usize, Option<PathBuf>)> = Vec::new();
    let mut fenced = false;
    let mut text = String::new();
    let mut heading = String::new();
    let flush = |parts: &mut Vec<Part>, heading: &str, text: &mut String, open: &[_]| {
        let krate = open.iter().rev().find_map(|(_, k): &(usize, Option<PathBuf>)| k.clone());
        parts.push(Part { heading: heading.to_owned(), text: std::mem::take(text), krate });
    };
    for line in read(&repo().join("ARCHITECTURE.md")).lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            text.push('\n');
            continue;
        }
        if fenced {
            text.push('\n');
            continue;
        }
        if line.starts_with('#') {
            flush(&mut parts, &heading, &mut text, &open);
            let level = line.chars().take_while(|&c| c == '#').count();
            open.retain(|&(l, _)| l < level);
            let krate = crates
                .iter()
                .find(|dir| code_spans(line).any(|s| s == relative(dir, repo())))
                .cloned();
            open.push((level, krate));
            heading = line.to_owned();
        }
        text.push_str(line);
        text.push('\n');
    }
    flush(&mut parts, &heading, &mut text, &open);
    parts
}

/// The path a code span names, and the test it cites (`path/to/file.rs::name`), if it looks
/// like a path of the repository: no spaces, no absolute or home path (`/metrics`,
/// `~/.cache`), no wildcard or variable, and a `/` in it or a file's extension.
fn path_in(span: &str) -> Option<(&str, Option<&str>)> {
    let (path, test) = match span.split_once("::") {
        Some((path, test)) => (path, Some(test)),
        None => (span, None),
    };
    let plain = path.chars().all(|c| c.is_alphanumeric() || "_-./".contains(c));
    let looks = path.contains('/') || [".rs", ".md", ".toml"].iter().any(|e| path.ends_with(e));
    (plain && looks && !path.starts_with('/') && !path.is_empty()).then_some((path, test))
}

/// Where `path` (named in a part of `krate`'s section, if any) is, if it is anywhere: a
/// folder when it ends in `/`.
fn resolve(path: &str, krate: Option<&Path>) -> Option<PathBuf> {
    let mut bases = vec![repo().to_path_buf()];
    match krate {
        Some(dir) => bases.extend([dir.join("src"), dir.to_path_buf()]),
        None => bases.extend(crates().into_iter().map(|dir| dir.join("src"))),
    }
    let folder = path.ends_with('/');
    bases
        .into_iter()
        .map(|base| base.join(path.trim_end_matches('/')))
        .find(|p| if folder { p.is_dir() } else { p.exists() })
}

/// Whether `code` defines a function `name`.
fn defines(code: &str, name: &str) -> bool {
    code.match_indices(&format!("fn {name}")).any(|(at, found)| {
        let after = code[at + found.len()..].chars().next();
        let before = code[..at].chars().next_back();
        !after.is_some_and(is_ident) && !before.is_some_and(is_ident)
    })
}

/// The one-way graph ARCHITECTURE.md draws: each package of the workspace and the packages
/// of the workspace its `[dependencies]` may name.
const LAYERS: &[(&str, &[&str])] = &[
    ("etcdlat-core", &[]),
    ("etcdlat-render", &["etcdlat-core"]),
    ("etcdlat-driver", &["etcdlat-core"]),
    ("etcdlat-cli", &["etcdlat-core", "etcdlat-render", "etcdlat-driver"]),
    ("etcdlat-testkit", &["etcdlat-driver"]),
    ("etcdlat", &["etcdlat-core", "etcdlat-driver", "etcdlat-render"]),
];

/// What each package may have besides in its `[dev-dependencies]`: the testkit, and for the
/// driver the renderers, which its busy tests read the text report through.
const DEV_LAYERS: &[(&str, &[&str])] = &[
    ("etcdlat-driver", &["etcdlat-testkit", "etcdlat-render"]),
    ("etcdlat-cli", &["etcdlat-testkit"]),
    ("etcdlat", &["etcdlat-testkit"]),
];

/// What the pure crates do without: an async runtime, gRPC, the command line.
const PURE: &[&str] = &["etcdlat-core", "etcdlat-render"];
const IMPURE: &[&str] = &["tokio", "etcd-client", "tonic", "h2", "prost", "clap"];

/// What only the binary uses.
const BINARY: &str = "etcdlat-cli";
const BINARY_ONLY: &[&str] = &["clap", "anyhow", "tracing-subscriber"];

/// A manifest's package name, and the names of the packages in its tables `table`
/// (`dependencies`, `dev-dependencies`), target-specific ones included.
fn manifest(path: &Path, table: &str) -> (String, BTreeSet<String>) {
    let manifest: toml::Table =
        read(path).parse().unwrap_or_else(|e| panic!("parsing {}: {e}", relative(path, repo())));
    let name = manifest["package"]["name"].as_str().expect("a package name").to_owned();
    let targets = manifest.get("target").and_then(toml::Value::as_table);
    let tables = std::iter::once(manifest.get(table))
        .chain(targets.into_iter().flat_map(|t| t.values().map(|t| t.get(table))))
        .flatten()
        .filter_map(toml::Value::as_table);
    let mut names = BTreeSet::new();
    for deps in tables {
        for (key, value) in deps {
            let package = value.get("package").and_then(toml::Value::as_str).unwrap_or(key);
            names.insert(package.to_owned());
        }
    }
    (name, names)
}

#[test]
fn crates_depend_one_way() {
    let manifests: Vec<PathBuf> = std::iter::once(repo().to_path_buf())
        .chain(crates())
        .map(|dir| dir.join("Cargo.toml"))
        .collect();
    let ours: BTreeSet<&str> = LAYERS.iter().map(|(name, _)| *name).collect();
    let lookup = |table: &[(&str, &'static [&'static str])], name: &str| {
        table.iter().find(|(n, _)| *n == name).map_or(&[][..], |(_, allowed)| *allowed)
    };
    let mut wrong = Vec::new();
    for path in &manifests {
        let at = relative(path, repo());
        let (name, deps) = manifest(path, "dependencies");
        let (_, dev_deps) = manifest(path, "dev-dependencies");
        if !ours.contains(name.as_str()) {
            wrong.push(format!("{at}: `{name}` has no place in the graph"));
            continue;
        }
        let allowed = lookup(LAYERS, &name);
        for dep in deps.iter().filter(|d| ours.contains(d.as_str())) {
            if !allowed.contains(&dep.as_str()) {
                wrong.push(format!("{at}: [dependencies] names `{dep}`"));
            }
        }
        let dev_allowed = lookup(DEV_LAYERS, &name);
        for dep in dev_deps.iter().filter(|d| ours.contains(d.as_str())) {
            if !allowed.contains(&dep.as_str()) && !dev_allowed.contains(&dep.as_str()) {
                wrong.push(format!("{at}: [dev-dependencies] names `{dep}`"));
            }
        }
        if PURE.contains(&name.as_str()) {
            for dep in deps.iter().filter(|d| IMPURE.contains(&d.as_str())) {
                wrong.push(format!("{at}: the pure `{name}` depends on `{dep}`"));
            }
        }
        if name != BINARY {
            for dep in deps.iter().filter(|d| BINARY_ONLY.contains(&d.as_str())) {
                wrong.push(format!("{at}: `{dep}` is the binary's, not `{name}`'s"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the crates depend one way, as ARCHITECTURE.md draws it (cli -> render -> core, \
         cli -> driver -> core, testkit -> driver; core and render pure):\n  {}",
        wrong.join("\n  ")
    );
}

/// The code of a crate's source files outside their tests: each file's path from `src` and
/// its code, comments, literals and `#[cfg(test)]` items blanked out, test-only files left
/// out.
fn code_outside_tests(src: &Path) -> Vec<(String, String)> {
    let (_, paths) = walk(src);
    let mut test_only = Vec::new();
    let mut files = Vec::new();
    for path in paths {
        let (code, tests) = without_tests(&code_of(&read(&src.join(&path))));
        let stem = path.trim_end_matches(".rs");
        let module = match stem.rsplit_once('/') {
            Some((folder, "mod")) => folder.to_owned(),
            None if matches!(stem, "lib" | "main") => String::new(),
            _ => stem.to_owned(),
        };
        test_only.extend(
            tests.iter().map(
                |t| {
                    if module.is_empty() { t.clone() } else { format!("{module}/{t}") }
                },
            ),
        );
        files.push((path, code));
    }
    files.retain(|(path, _)| {
        !test_only.iter().any(|t| *path == format!("{t}.rs") || path.starts_with(&format!("{t}/")))
    });
    files
}

/// What only the binary does: print, read argv or the environment, handle signals, exit.
const BINARY_CALLS: &[&str] = &[
    "println!",
    "print!",
    "eprintln!",
    "eprint!",
    "dbg!",
    "io::stdout",
    "io::stderr",
    "env::var",
    "env::var_os",
    "env::vars",
    "env::args",
    "env::args_os",
    "process::exit",
    "tokio::signal",
    "ctrl_c",
];

#[test]
fn libraries_never_print_read_the_environment_or_exit() {
    let mut found = Vec::new();
    for name in ["core", "render", "driver"] {
        let src = repo().join("crates").join(name).join("src");
        for (path, code) in code_outside_tests(&src) {
            for call in BINARY_CALLS {
                let named = code.match_indices(call).any(|(at, _)| {
                    let before = code[..at].chars().next_back();
                    let after = code[at + call.len()..].chars().next();
                    !before.is_some_and(is_ident)
                        && (call.ends_with('!') || !after.is_some_and(is_ident))
                });
                if named {
                    found.push(format!("{}: `{call}`", relative(&src.join(&path), repo())));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "only the binary prints, reads argv or the environment, handles signals or exits; \
         the libraries emit `tracing` events and take shutdown as a future:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn architecture_names_every_source_folder() {
    let parts = code_map();
    let in_section = |krate: Option<&Path>, name: &str| {
        parts.iter().any(|p| p.krate.as_deref() == krate && code_spans(&p.text).any(|s| s == name))
    };
    let mut missing = Vec::new();
    for dir in crates() {
        let src = dir.join("src");
        for folder in walk(&src).0 {
            let path = relative(&src.join(&folder), repo());
            let named = if folder.is_empty() {
                parts.iter().any(|p| p.krate.as_deref() == Some(dir.as_path()))
            } else {
                in_section(Some(&dir), &format!("{folder}/"))
                    || in_section(None, &format!("{path}/"))
            };
            if !named {
                missing.push(format!("{path}/"));
            }
        }
    }
    for top in ["src", "benches", "examples"] {
        for folder in walk(&repo().join(top)).0 {
            let path = relative(&repo().join(top).join(&folder), repo());
            if !in_section(None, &format!("{path}/")) {
                missing.push(format!("{path}/"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name these source folders (in their crate's section, as \
         `folder/` from its `src/`; elsewhere by their path from the root):\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn architecture_names_only_paths_that_exist() {
    let mut gone = Vec::new();
    for part in code_map() {
        for span in code_spans(&part.text) {
            let Some((path, _)) = path_in(span) else { continue };
            if resolve(path, part.krate.as_deref()).is_none() {
                gone.push(format!("`{path}` (in {})", part.heading));
            }
        }
    }
    assert!(
        gone.is_empty(),
        "ARCHITECTURE.md names paths that are not in the repository:\n  {}",
        gone.join("\n  ")
    );
}

#[test]
fn every_invariant_cites_tests_that_exist() {
    let parts = code_map();
    let mut wrong = Vec::new();
    for part in &parts {
        for span in code_spans(&part.text) {
            let Some((path, Some(test))) = path_in(span) else { continue };
            let file = repo().join(path);
            if !file.is_file() {
                wrong.push(format!("`{span}`: no file {path}"));
            } else if !defines(&read(&file), test) {
                wrong.push(format!("`{span}`: {path} has no `fn {test}`"));
            }
        }
    }
    let invariants =
        parts.iter().find(|p| p.heading == "## Invariants").expect("an `## Invariants` section");
    let mut bullets: Vec<String> = Vec::new();
    for line in invariants.text.lines() {
        if line.starts_with("- ") {
            bullets.push(line.to_owned());
        } else if let Some(last) = bullets.last_mut().filter(|_| line.starts_with(' ')) {
            last.push_str(line);
        }
    }
    assert!(!bullets.is_empty(), "the invariants are a list");
    for bullet in &bullets {
        if !code_spans(bullet).any(|s| path_in(s).is_some_and(|(_, test)| test.is_some())) {
            wrong.push(format!("an invariant cites no test: {}", &bullet[..bullet.len().min(80)]));
        }
    }
    assert!(
        wrong.is_empty(),
        "each invariant in ARCHITECTURE.md cites the tests that hold it, as \
         `path/to/file.rs::name`, and each is defined there:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn every_source_file_opens_with_its_doc_line() {
    let mut bare = Vec::new();
    for dir in ["src", "benches", "examples", "tests"]
        .map(|d| repo().join(d))
        .into_iter()
        .chain(crates())
        .filter(|dir| dir.is_dir())
    {
        for file in walk(&dir).1 {
            let path = dir.join(&file);
            if !read(&path).starts_with("//!") {
                bare.push(relative(&path, repo()));
            }
        }
    }
    assert!(
        bare.is_empty(),
        "every source file says what it holds in its opening `//!` line (ARCHITECTURE.md \
         names folders, not files):\n  {}",
        bare.join("\n  ")
    );
}

/// The `tests/it` folders: the root package's and each crate's.
fn test_folders() -> Vec<PathBuf> {
    std::iter::once(repo().to_path_buf())
        .chain(crates())
        .map(|dir| dir.join("tests/it"))
        .filter(|dir| dir.join("main.rs").is_file())
        .collect()
}

#[test]
fn every_test_module_is_declared_and_described_in_its_index() {
    let mut wrong = Vec::new();
    for dir in test_folders() {
        let modules: BTreeSet<String> = entries(&dir)
            .into_iter()
            .filter_map(|path| {
                let name = path.file_stem()?.to_string_lossy().into_owned();
                let module = if path.is_dir() {
                    path.join("mod.rs").is_file()
                } else {
                    path.extension().is_some_and(|e| e == "rs") && name != "main"
                };
                module.then_some(name)
            })
            .collect();
        let index = read(&dir.join("main.rs"));
        let declared: BTreeSet<&str> = index
            .lines()
            .filter_map(|l| {
                let l = l.trim().trim_start_matches("pub(crate) ").trim_start_matches("pub ");
                l.strip_prefix("mod ")?.strip_suffix(';')
            })
            .collect();
        let described: BTreeSet<&str> =
            index.lines().filter_map(|l| l.strip_prefix("//! - `")?.split('`').next()).collect();
        let at = relative(&dir.join("main.rs"), repo());
        for module in &modules {
            if !declared.contains(module.as_str()) {
                wrong.push(format!("{at}: `{module}` is not declared (no `mod {module};`)"));
            }
            if !described.contains(module.as_str()) {
                wrong.push(format!("{at}: `{module}` is not described in its `//!` list"));
            }
        }
        for name in described.iter().filter(|&&n| !modules.contains(n)) {
            wrong.push(format!("{at}: `{name}` is described but has no file"));
        }
    }
    assert!(
        wrong.is_empty(),
        "each tests/it/main.rs declares every module of its folder and says in its `//!` \
         list what belongs in it:\n  {}",
        wrong.join("\n  ")
    );
}

/// `text` with its comments and its string and character literals blanked out (newlines
/// kept): a path in them is no import.
fn code_of(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out: Vec<char> = chars.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for c in &mut out[from..to.min(chars.len())] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let at = |j: usize| chars.get(j).copied().unwrap_or('\0');
        let start = i;
        if at(i) == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            blank(&mut out, start, i);
        } else if at(i) == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if at(i) == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if at(i) == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else if i >= chars.len() {
                    break;
                } else {
                    i += 1;
                }
            }
            blank(&mut out, start, i);
        } else if let Some(r) = raw_string_at(&chars, i) {
            let hashes = (r + 1..).take_while(|&j| at(j) == '#').count();
            i = r + hashes + 2;
            while i < chars.len() && !(chars[i] == '"' && (1..=hashes).all(|h| at(i + h) == '#')) {
                i += 1;
            }
            i += hashes + 1;
            blank(&mut out, start, i);
        } else if at(i) == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            blank(&mut out, start, i);
        } else if at(i) == '\'' && (at(i + 1) == '\\' || at(i + 2) == '\'') {
            // A character literal; a lifetime (`'a`) has no closing quote after one character.
            // An escape's first character may be a quote (`'\''`).
            i += if at(i + 1) == '\\' { 3 } else { 2 };
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            blank(&mut out, start, i);
        } else if is_ident(at(i)) {
            while is_ident(at(i)) {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// Where the `r` of a raw string literal (`r"..."`, `br#"..."#`) starting at `i` is.
fn raw_string_at(chars: &[char], i: usize) -> Option<usize> {
    let at = |j: usize| chars.get(j).copied().unwrap_or('\0');
    if i > 0 && is_ident(at(i - 1)) {
        return None;
    }
    let r = if at(i) == 'b' { i + 1 } else { i };
    let quote = (r + 1..).find(|&j| at(j) != '#')?;
    (at(r) == 'r' && at(quote) == '"').then_some(r)
}

/// `code` without the items under `#[cfg(test)]`; the names of the test-only file modules
/// (`#[cfg(test)] mod tests;`).
fn without_tests(code: &str) -> (String, Vec<String>) {
    const GATE: &str = "#[cfg(test)]";
    let mut code = code.to_owned();
    let mut test_files = Vec::new();
    while let Some(at) = code.find(GATE) {
        let bytes = code.as_bytes();
        let (mut i, mut nesting) = (at + GATE.len(), 0i32);
        let end = loop {
            match bytes.get(i) {
                None => break i,
                Some(b'(' | b'[') => nesting += 1,
                Some(b')' | b']') => nesting -= 1,
                Some(b';') if nesting == 0 => break i + 1,
                Some(b'{') if nesting == 0 => {
                    let mut depth = 0;
                    while let Some(&b) = bytes.get(i) {
                        depth += i32::from(b == b'{') - i32::from(b == b'}');
                        i += 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    break i;
                }
                Some(_) => {}
            }
            i += 1;
        };
        let item = &code[at + GATE.len()..end];
        let words: Vec<&str> = item
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        if item.trim_end().ends_with(';') {
            let module = words.iter().position(|&w| w == "mod").and_then(|n| words.get(n + 1));
            test_files.extend(module.map(|w| (*w).to_owned()));
        }
        code.replace_range(at..end, &" ".repeat(end - at));
    }
    (code, test_files)
}

/// `code`'s inline modules (`mod name { ... }`) taken out, each with its path from `code`'s
/// module and its text, after the rest (path `[]`): a path in one is relative to it.
fn inline_modules(code: &str) -> Vec<(Vec<String>, String)> {
    let mut outer = code.to_owned();
    let mut inner = Vec::new();
    let mut from = 0;
    while let Some(found) = outer[from..].find("mod ") {
        let at = from + found;
        from = at + 4;
        if outer[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let rest = &outer[at + 4..];
        let name: String = rest.trim_start().chars().take_while(|&c| is_ident(c)).collect();
        let after = rest.trim_start()[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = outer.len() - after.len();
        let mut depth = 0;
        let mut close = open;
        for (i, b) in outer.bytes().enumerate().skip(open) {
            depth += i32::from(b == b'{') - i32::from(b == b'}');
            if depth == 0 {
                close = i;
                break;
            }
        }
        for (path, text) in inline_modules(&outer[open + 1..close]) {
            inner.push((std::iter::once(name.clone()).chain(path).collect(), text));
        }
        outer.replace_range(open + 1..close, &" ".repeat(close - open - 1));
    }
    let mut all = vec![(Vec::new(), outer)];
    all.extend(inner);
    all
}

/// The paths of a `use` tree (`a::{b, c::{d as e}}`), each with the name it binds (`None`
/// for a glob).
fn use_paths(tree: &str) -> Vec<(Vec<String>, Option<String>)> {
    let mut out = Vec::new();
    expand_use(tree, &[], &mut out);
    out
}

fn segments(path: &str) -> impl Iterator<Item = String> + '_ {
    path.split("::").map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

fn expand_use(tree: &str, prefix: &[String], out: &mut Vec<(Vec<String>, Option<String>)>) {
    let Some(open) = tree.find('{') else {
        let words: Vec<&str> = tree.split_whitespace().collect();
        let (path, alias) = match words.as_slice() {
            [path, "as", alias] => (*path, Some((*alias).to_owned())),
            _ => (tree, None),
        };
        let mut path: Vec<String> = prefix.iter().cloned().chain(segments(path)).collect();
        if path.last().is_some_and(|s| s == "self") {
            path.pop();
        }
        if path.last().is_some_and(|s| s == "*") {
            path.pop();
            out.push((path, None));
        } else if let Some(name) = alias.or_else(|| path.last().cloned()) {
            out.push((path, Some(name)));
        }
        return;
    };
    let prefix: Vec<String> = prefix.iter().cloned().chain(segments(&tree[..open])).collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut depth, mut from) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand_use(&inner[from..i], &prefix, out);
                from = i + 1;
            }
            _ => {}
        }
    }
    expand_use(&inner[from..], &prefix, out);
}

/// A module of a crate, by its path from the crate's root (`["load", "audit"]`).
type Module = Vec<String>;

/// One crate's source files as modules, and what each imports: the files it names paths
/// into, through `use` or inline (`super::request::Work`), re-exports followed to the file
/// that defines the name.
struct Imports {
    files: BTreeMap<Module, String>,
    edges: BTreeMap<Module, BTreeSet<Module>>,
}

impl Imports {
    fn of(src: &Path) -> Self {
        let (_, paths) = walk(src);
        let mut files = BTreeMap::new();
        let mut code = BTreeMap::new();
        let mut test_only = BTreeSet::new();
        for path in &paths {
            let mut module: Module =
                path.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                module.pop();
            }
            let (text, tests) = without_tests(&code_of(&read(&src.join(path))));
            test_only.extend(
                tests.into_iter().map(|t| module.iter().cloned().chain([t]).collect::<Module>()),
            );
            files.insert(module.clone(), relative(&src.join(path), repo()));
            code.insert(module, text);
        }
        let children = |m: &Module, name: &str| {
            let mut child = m.clone();
            child.push(name.to_owned());
            files.contains_key(&child)
        };
        // Where a path written in module `m` points, from the crate's root; `None` for an
        // external crate's.
        let absolute = |m: &Module, path: &[String]| -> Option<Module> {
            let (base, rest): (Module, &[String]) = match path.first().map(String::as_str) {
                Some("crate") => (Vec::new(), &path[1..]),
                Some("super" | "self") => {
                    let mut base = m.clone();
                    let mut rest = path;
                    while let Some(first) = rest.first().filter(|s| *s == "super" || *s == "self") {
                        if first == "super" {
                            base.pop();
                        }
                        rest = &rest[1..];
                    }
                    (base, rest)
                }
                Some(first) if children(m, first) => (m.clone(), path),
                _ => return None,
            };
            Some(base.into_iter().chain(rest.iter().cloned()).collect())
        };
        let mut named: BTreeMap<Module, Vec<Module>> = BTreeMap::new();
        let mut bindings: BTreeMap<Module, BTreeMap<String, Module>> = BTreeMap::new();
        for (file, text) in &code {
            let mut paths = Vec::new();
            for (inline, text) in inline_modules(text) {
                let m: Module = file.iter().chain(&inline).cloned().collect();
                for statement in use_statements(&text) {
                    for (path, name) in use_paths(statement) {
                        let Some(target) = absolute(&m, &path) else { continue };
                        if let Some(name) = name {
                            bindings.entry(m.clone()).or_default().insert(name, target.clone());
                        }
                        paths.push(target);
                    }
                }
                for path in inline_paths(&text) {
                    paths.extend(absolute(&m, &path));
                }
            }
            named.insert(file.clone(), paths);
        }
        let resolve = |path: &Module| -> Module {
            let mut path = path.clone();
            for _ in 0..8 {
                let file = (0..=path.len())
                    .rev()
                    .map(|n| path[..n].to_vec())
                    .find(|p| files.contains_key(p));
                let file = file.unwrap_or_default();
                let rest = &path[file.len()..];
                match rest.first().and_then(|name| bindings.get(&file)?.get(name)) {
                    Some(target) if *target != path => {
                        path = target.iter().chain(&rest[1..]).cloned().collect();
                    }
                    _ => return file,
                }
            }
            path
        };
        let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        for (m, paths) in &named {
            if test_only.iter().any(|t| m.starts_with(t)) {
                continue;
            }
            for path in paths {
                let target = resolve(path);
                // A file naming its own folder's `mod.rs` (or the crate's root) reaches the
                // names that folder's files share: not counted (see the test).
                if !m.starts_with(&target) && files.contains_key(&target) {
                    edges.entry(m.clone()).or_default().insert(target);
                }
            }
        }
        Self { files, edges }
    }

    /// The sets of files that import each other in a circle, each with its edges.
    fn cycles(&self) -> Vec<Vec<(String, String)>> {
        let mut cycles = Vec::new();
        let mut done: BTreeSet<&Module> = BTreeSet::new();
        for start in self.files.keys() {
            if done.contains(start) {
                continue;
            }
            // The files reachable from `start` that reach it back: its circle.
            let from = self.reach(start, |m| self.edges.get(m).into_iter().flatten().collect());
            let to = self.reach(start, |m| {
                self.edges.iter().filter(|(_, ts)| ts.contains(m)).map(|(f, _)| f).collect()
            });
            let circle: BTreeSet<&Module> = from.intersection(&to).copied().collect();
            done.extend(&circle);
            if circle.len() > 1 {
                cycles.push(
                    circle
                        .iter()
                        .flat_map(|&m| {
                            self.edges[m]
                                .iter()
                                .filter(|t| circle.contains(t))
                                .map(move |t| (self.files[m].clone(), self.files[t].clone()))
                        })
                        .collect(),
                );
            }
        }
        cycles
    }

    fn reach<'a>(
        &'a self,
        start: &'a Module,
        next: impl Fn(&Module) -> Vec<&'a Module>,
    ) -> BTreeSet<&'a Module> {
        let mut seen = BTreeSet::from([start]);
        let mut pending = vec![start];
        while let Some(m) = pending.pop() {
            for n in next(m) {
                if seen.insert(n) {
                    pending.push(n);
                }
            }
        }
        seen
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The trees of the `use` declarations in `code`.
fn use_statements(code: &str) -> impl Iterator<Item = &str> {
    code.match_indices("use").filter_map(move |(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + 3..].chars().next();
        if before.is_some_and(is_ident) || !after.is_some_and(char::is_whitespace) {
            return None;
        }
        let rest = &code[at + 3..];
        Some(&rest[..rest.find(';')?])
    })
}

/// The paths written in `code`: each run of identifiers joined by `::` that does not
/// continue another (what a `use` declaration's braces hold is [`use_paths`]' to read).
fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut paths = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let continues = i >= 2 && chars[i - 1] == ':' && chars[i - 2] == ':';
        if !is_ident(chars[i])
            || (i > 0 && (is_ident(chars[i - 1]) || chars[i - 1] == '$'))
            || continues
        {
            i += 1;
            continue;
        }
        let mut path = Vec::new();
        loop {
            let start = i;
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
            path.push(chars[start..i].iter().collect::<String>());
            if chars.get(i) == Some(&':')
                && chars.get(i + 1) == Some(&':')
                && chars.get(i + 2).is_some_and(|&c| is_ident(c))
            {
                i += 2;
            } else {
                break;
            }
        }
        if path.len() > 1 {
            paths.push(path);
        }
    }
    paths
}

/// Counted: every path from one source file of a crate into another, through `use` or
/// written inline, followed through re-exports to the file that defines the name. Not
/// counted: unit tests (`#[cfg(test)]`), and a file naming its own folder's `mod.rs` or
/// the crate's root (`super::Error`): Rust makes a folder's `mod.rs` the place for the names
/// its files share, and the cycles the style forbids, one concept split over two files, are
/// between files side by side or in different folders.
#[test]
fn source_files_import_without_cycles() {
    let mut found = Vec::new();
    for dir in crates() {
        for cycle in Imports::of(&dir.join("src")).cycles() {
            let edges: Vec<String> =
                cycle.iter().map(|(from, to)| format!("{from} -> {to}")).collect();
            found.push(format!("a circle:\n    {}", edges.join("\n    ")));
        }
    }
    assert!(
        found.is_empty(),
        "files import each other in a circle (one concept split over two files, or two \
         concepts in one: see ARCHITECTURE.md's invariants):\n  {}",
        found.join("\n  ")
    );
}
