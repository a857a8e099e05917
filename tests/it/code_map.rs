//! The code map stays true: ARCHITECTURE.md against the source trees, each `tests/it/main.rs`
//! index against its folder, and the source files' imports against the rule that files
//! import down their layers, never in circles. Each test names every entry it finds wrong,
//! not only the first.
//!
//! ARCHITECTURE.md's conventions, as these tests read them: a source tree (a crate's `src/`,
//! the root's `src/`, `benches/`, `examples/`) has a heading that names it in backticks
//! (`` `crates/core` ``, `` `src/lib.rs` ``, `` `benches/` ``); a folder inside it has a
//! heading of its own (`` `load/` ``) or a bullet in its parent's text (`` - `fault/` ``);
//! a file is named by its name or a path ending in it in its folder's text (the heading's
//! lines up to the next heading, or the bullet), or by its path from the repository's root
//! anywhere.

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

/// The source trees ARCHITECTURE.md maps: how its headings name each, and its folder.
fn trees() -> Vec<(String, PathBuf)> {
    let mut trees: Vec<(String, PathBuf)> =
        crates().into_iter().map(|dir| (relative(&dir, repo()), dir.join("src"))).collect();
    for top in ["src", "benches", "examples"] {
        trees.push((top.to_owned(), repo().join(top)));
    }
    trees
}

/// The text in backticks of `text`.
fn code_spans(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

/// ARCHITECTURE.md, its fenced blocks (the diagrams) blanked out.
struct CodeMap {
    text: String,
    lines: Vec<String>,
    /// Each heading's line and level (the number of `#`).
    headings: Vec<(usize, usize)>,
}

impl CodeMap {
    fn read() -> Self {
        let mut fenced = false;
        let mut lines = Vec::new();
        for line in read(&repo().join("ARCHITECTURE.md")).lines() {
            if line.starts_with("```") {
                fenced = !fenced;
            }
            lines.push(if fenced || line.starts_with("```") {
                String::new()
            } else {
                line.to_owned()
            });
        }
        let headings = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| l.starts_with('#'))
            .map(|(i, l)| (i, l.chars().take_while(|&c| c == '#').count()))
            .collect();
        Self { text: lines.join("\n"), lines, headings }
    }

    /// Heading `h`'s line and the lines after it up to the next heading.
    fn section(&self, h: usize) -> String {
        let (start, _) = self.headings[h];
        let end = self.headings.get(h + 1).map_or(self.lines.len(), |&(line, _)| line);
        self.lines[start..end].join("\n")
    }

    /// The headings under heading `h`, up to the next heading of its level or above.
    fn under(&self, h: usize) -> &[(usize, usize)] {
        let level = self.headings[h].1;
        let end = self.headings[h + 1..]
            .iter()
            .position(|&(_, l)| l <= level)
            .map_or(self.headings.len(), |n| h + 1 + n);
        &self.headings[h + 1..end]
    }

    fn heading_index(&self, line: usize) -> usize {
        self.headings.iter().position(|&(l, _)| l == line).expect("a heading")
    }

    /// The heading that names the tree `name` (`crates/core`, `src`, ...).
    fn tree_heading(&self, name: &str) -> Option<usize> {
        let prefix = format!("{name}/");
        self.headings.iter().position(|&(line, _)| {
            code_spans(&self.lines[line]).any(|s| s == name || s.starts_with(&prefix))
        })
    }

    /// The text that describes `folder` (relative to the tree whose heading is `tree`, `""`
    /// for the tree itself): its heading's section, or else its bullet in its parent's text.
    fn folder_text(&self, tree: usize, folder: &str) -> Option<String> {
        if folder.is_empty() {
            return Some(self.section(tree));
        }
        let slashed = format!("{folder}/");
        if let Some(&(line, _)) = self
            .under(tree)
            .iter()
            .find(|&&(line, _)| code_spans(&self.lines[line]).any(|s| s == slashed))
        {
            return Some(self.section(self.heading_index(line)));
        }
        let (parent, name) = folder.rsplit_once('/').unwrap_or(("", folder));
        let names = [format!("{name}/"), slashed, folder.to_owned()];
        bullets(&self.folder_text(tree, parent)?)
            .into_iter()
            .find(|bullet| code_spans(bullet).any(|s| names.iter().any(|n| n == s)))
    }

    /// Every code span of the document (one may go on over a line break).
    fn spans(&self) -> impl Iterator<Item = &str> {
        code_spans(&self.text)
    }
}

/// The bullets of `text`: each from a line starting `- ` up to the next such line, an empty
/// line or a heading.
fn bullets(text: &str) -> Vec<String> {
    let mut bullets: Vec<String> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        if line.starts_with("- ") {
            bullets.push(line.to_owned());
            open = true;
        } else if line.trim().is_empty() || line.starts_with('#') {
            open = false;
        } else if open {
            let last = bullets.last_mut().expect("an open bullet");
            last.push('\n');
            last.push_str(line);
        }
    }
    bullets
}

/// `text` (a folder's) without the bullets of the folders in it (`` - `fault/`: ... ``): a
/// folder's own files are named outside them. A folder's bullet is its own.
fn own_text(text: &str) -> String {
    if text.starts_with("- ") {
        return text.to_owned();
    }
    let mut own = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with("- ") {
            skipping = code_spans(line).next().is_some_and(|s| s.ends_with('/'));
        } else if line.trim().is_empty() || line.starts_with('#') {
            skipping = false;
        }
        if !skipping {
            own.push(line);
        }
    }
    own.join("\n")
}

/// Whether `text` names the file `file` (relative to its tree): by its name, or by a path
/// that ends in it.
fn names_file(text: &str, file: &str) -> bool {
    let name = file.rsplit('/').next().expect("a name");
    code_spans(text).any(|s| s == name || (s.contains('/') && file.ends_with(&format!("/{s}"))))
}

#[test]
fn architecture_names_every_source_folder_and_file() {
    let map = CodeMap::read();
    let everywhere: BTreeSet<&str> = map.spans().collect();
    let mut missing = Vec::new();
    for (name, root) in trees() {
        let Some(tree) = map.tree_heading(&name) else {
            missing.push(format!("{} (no heading names `{name}`)", relative(&root, repo())));
            continue;
        };
        let (folders, files) = walk(&root);
        let texts: BTreeMap<&str, Option<String>> =
            folders.iter().map(|f| (f.as_str(), map.folder_text(tree, f))).collect();
        for (folder, text) in &texts {
            if text.is_none() {
                missing.push(format!("{}/", relative(&root.join(folder), repo())));
            }
        }
        for file in &files {
            let path = relative(&root.join(file), repo());
            let folder = file.rsplit_once('/').map_or("", |(folder, _)| folder);
            let named =
                texts[folder].as_deref().is_some_and(|text| names_file(&own_text(text), file));
            if !named && !everywhere.contains(path.as_str()) {
                missing.push(path);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name these (a folder by a heading or a bullet of its parent's \
         section, a file in its folder's section), so the code map is no longer the whole \
         code:\n  {}",
        missing.join("\n  ")
    );
}

#[test]
fn architecture_names_no_file_that_is_gone() {
    let map = CodeMap::read();
    let files: Vec<String> = {
        let mut files = Vec::new();
        for dir in ["src", "benches", "examples", "tests"]
            .map(|d| repo().join(d))
            .into_iter()
            .chain(crates())
        {
            if dir.is_dir() {
                files.extend(walk(&dir).1.iter().map(|f| relative(&dir.join(f), repo())));
            }
        }
        files
    };
    let gone: BTreeSet<&str> = map
        .spans()
        .filter(|s| {
            // A file's path, not the words `.rs` or `*.rs`.
            let name = s.rsplit('/').next().unwrap_or(s);
            name.strip_suffix(".rs")
                .is_some_and(|stem| !stem.is_empty() && stem.chars().all(is_ident))
        })
        .filter(|s| !files.iter().any(|f| f == s || f.ends_with(&format!("/{s}"))))
        .collect();
    assert!(
        gone.is_empty(),
        "ARCHITECTURE.md names files that are not in the repository: {gone:?}"
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
