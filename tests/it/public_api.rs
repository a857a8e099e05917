//! The public API as an embedder sees it, written to `docs/public-api.txt` and held there: a
//! change to what the library crates export is a diff of that file, reviewed as well-kept
//! crates review theirs (cargo-public-api's listings).
//!
//! The listing is made from rustdoc's JSON output (`--output-format json`, unstable, so
//! rustdoc is run with `RUSTC_BOOTSTRAP=1` on the stable toolchain) of the facade and of
//! each library crate it re-exports: every public item reachable from a crate's root, a line
//! each, with function signatures, field and variant types, `#[non_exhaustive]` marks and
//! the traits each type implements. Items hidden from the docs (`#[doc(hidden)]`: what is
//! public only for a sibling crate) are one line, their contents not listed.
//!
//! `ETCDLAT_UPDATE_PUBLIC_API=1 cargo test -p etcdlat --test it public_api` writes the file
//! anew; without it the test fails on any difference and shows it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The repository: the root package's folder.
const CHECKOUT: &str = env!("CARGO_MANIFEST_DIR");

/// The checked-in listing.
const LISTING: &str = "docs/public-api.txt";

/// The crates whose API embedders get, the facade first.
const CRATES: [(&str, &str); 4] = [
    ("etcdlat", "etcdlat"),
    ("etcdlat-core", "etcdlat_core"),
    ("etcdlat-driver", "etcdlat_driver"),
    ("etcdlat-render", "etcdlat_render"),
];

/// The rustdoc JSON format this reader knows (rustdoc's `FORMAT_VERSION`).
const FORMAT_VERSIONS: std::ops::RangeInclusive<u64> = 53..=60;

#[test]
fn the_public_api_is_the_checked_in_listing() {
    let listing = listing();
    let path = Path::new(CHECKOUT).join(LISTING);
    if std::env::var_os("ETCDLAT_UPDATE_PUBLIC_API").is_some() {
        fs::write(&path, &listing).unwrap();
        return;
    }
    let checked_in = fs::read_to_string(&path).unwrap_or_default();
    if checked_in != listing {
        let old: BTreeSet<&str> = checked_in.lines().collect();
        let new: BTreeSet<&str> = listing.lines().collect();
        let mut diff = String::new();
        for gone in old.difference(&new) {
            let _ = writeln!(diff, "- {gone}");
        }
        for added in new.difference(&old) {
            let _ = writeln!(diff, "+ {added}");
        }
        panic!(
            "the public API is not {LISTING}; if the change is meant, write it anew with \
             ETCDLAT_UPDATE_PUBLIC_API=1 cargo test -p etcdlat --test it public_api, and \
             review the diff:\n{diff}"
        );
    }
}

#[test]
fn the_listing_counts_items_and_hides_what_is_internal() {
    // The reader itself on this workspace: it finds the facade's re-exports, a type's
    // fields and derives, and lists nothing inside a hidden module.
    let listing = fs::read_to_string(Path::new(CHECKOUT).join(LISTING)).unwrap();
    assert!(listing.contains("pub use etcdlat::core = etcdlat_core"), "{listing}");
    assert!(listing.contains("pub fn etcdlat_core::scenario::Scenario::from_toml_str("));
    assert!(listing.contains("impl Clone for etcdlat_core::report::Report"));
    let hidden: Vec<&str> = listing
        .lines()
        .filter(|l| l.starts_with("#[doc(hidden)] pub mod "))
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    for module in hidden {
        let inside = format!("{module}::");
        assert!(
            !listing.lines().any(|l| l.contains(&inside) && !l.starts_with("#[doc(hidden)]")),
            "{module} is hidden, yet items inside it are listed"
        );
    }
}

/// The listing of every crate of [`CRATES`], sorted within each crate, with a header that
/// counts its items.
fn listing() -> String {
    let mut out = String::new();
    let mut counts = Vec::new();
    let mut body = String::new();
    for (package, name) in CRATES {
        let lines = crate_lines(package, name);
        counts.push((name, lines.iter().filter(|l| !l.starts_with("impl ")).count()));
        let _ = writeln!(body, "\n# {name}");
        for line in lines {
            let _ = writeln!(body, "{line}");
        }
    }
    let _ = writeln!(
        out,
        "# The public API of etcdlat's library crates, written by tests/it/public_api.rs: an item\n\
         # a line (impl lines are the traits a type implements). Items public only for a sibling\n\
         # crate are #[doc(hidden)] and not listed inside."
    );
    for (name, n) in counts {
        let _ = writeln!(out, "# {name}: {n} items");
    }
    out + &body
}

/// rustdoc's JSON of one library crate, read. rustdoc runs in a target dir of its own: run
/// with `RUSTC_BOOTSTRAP` in the workspace's, it replaces the library crates' builds that
/// the same `cargo test`'s doctests link against afterwards.
fn rustdoc_json(package: &str, name: &str) -> Value {
    let target = Path::new(CHECKOUT).join("target").join("public-api");
    let status = Command::new(env!("CARGO"))
        .args(["rustdoc", "--quiet", "--locked", "--lib", "-p", package, "--"])
        .args(["-Z", "unstable-options", "--output-format", "json"])
        .current_dir(CHECKOUT)
        .env("RUSTC_BOOTSTRAP", "1")
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTDOCFLAGS")
        .status()
        .expect("cargo runs");
    assert!(status.success(), "cargo rustdoc -p {package} failed");
    let path = target.join("doc").join(format!("{name}.json"));
    let json: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let version = json["format_version"].as_u64().unwrap_or(0);
    assert!(
        FORMAT_VERSIONS.contains(&version),
        "rustdoc's JSON format {version} is not one this reader knows ({FORMAT_VERSIONS:?})"
    );
    json
}

/// The lines of one crate: every public item reachable from its root.
fn crate_lines(package: &str, name: &str) -> BTreeSet<String> {
    let json = rustdoc_json(package, name);
    let doc = Doc { index: json["index"].as_object().unwrap().clone().into_iter().collect() };
    let mut walk = Walk::default();
    let root = id_of(&json["root"]);
    doc.module(&root, name, &mut walk);
    // Items re-exported from a private module are listed where they are re-exported, as
    // rustdoc shows them; those public at their own path only by the `use` line.
    while let Some((target, parent, alias)) = walk.uses.pop() {
        if walk.listed.contains(&target) {
            continue;
        }
        if let Some(item) = doc.index.get(&target) {
            let mut item = item.clone();
            item["name"] = Value::String(alias);
            doc.item_lines(&item, &parent, &mut walk);
        }
    }
    walk.lines
}

/// What a walk of a crate's modules has found.
#[derive(Default)]
struct Walk {
    lines: BTreeSet<String>,
    /// The ids of items listed at a path of their own.
    listed: BTreeSet<String>,
    /// Re-exports seen: (the item's id, the module that re-exports it, its name there).
    uses: Vec<(String, String, String)>,
}

/// rustdoc's `index`: items by id.
struct Doc {
    index: BTreeMap<String, Value>,
}

fn id_of(v: &Value) -> String {
    match v {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => String::new(),
    }
}

fn is_public(item: &Value) -> bool {
    item["visibility"] == "public"
}

fn attrs(item: &Value) -> String {
    item["attrs"].to_string()
}

fn is_hidden(item: &Value) -> bool {
    let a = attrs(item);
    a.contains("doc(hidden)") || a.contains("\"hidden\"")
}

fn non_exhaustive(item: &Value) -> &'static str {
    if attrs(item).contains("non_exhaustive") { "#[non_exhaustive] " } else { "" }
}

impl Doc {
    fn item(&self, id: &Value) -> Option<&Value> {
        self.index.get(&id_of(id))
    }

    fn module(&self, id: &str, path: &str, walk: &mut Walk) {
        let Some(module) = self.index.get(id) else { return };
        for child in module["inner"]["module"]["items"].as_array().into_iter().flatten() {
            let Some(item) = self.item(child) else { continue };
            if !is_public(item) {
                continue;
            }
            self.item_lines(item, path, walk);
        }
    }

    fn item_lines(&self, item: &Value, parent: &str, walk: &mut Walk) {
        let name = item["name"].as_str().unwrap_or("_");
        let path = format!("{parent}::{name}");
        let (kind, inner) = match item["inner"].as_object().and_then(|o| o.iter().next()) {
            Some((k, v)) => (k.as_str(), v),
            None => return,
        };
        if kind != "use" && !walk.listed.insert(id_of(&item["id"])) {
            return;
        }
        let out = &mut walk.lines;
        if is_hidden(item) {
            out.insert(format!("#[doc(hidden)] pub {kind} {path}"));
            return;
        }
        match kind {
            "module" => {
                out.insert(format!("pub mod {path}"));
                self.module(&id_of(&item["id"]), &path, walk);
            }
            "use" => {
                let alias = inner["name"].as_str().unwrap_or(name);
                let glob = if inner["is_glob"] == true { "::*" } else { "" };
                out.insert(format!(
                    "pub use {parent}::{alias} = {}{glob}",
                    inner["source"].as_str().unwrap_or("?")
                ));
                let target = id_of(&inner["id"]);
                if glob.is_empty() && self.index.contains_key(&target) {
                    walk.uses.push((target, parent.to_owned(), alias.to_owned()));
                }
            }
            "struct" => {
                let generics = generics(&inner["generics"]);
                out.insert(format!("{}pub struct {path}{generics}", non_exhaustive(item)));
                let kind = &inner["kind"];
                if let Some(fields) = kind["plain"]["fields"].as_array() {
                    for f in fields {
                        self.field(f, &path, out);
                    }
                }
                if let Some(fields) = kind["tuple"].as_array() {
                    for (i, f) in fields.iter().enumerate() {
                        if let Some(field) = self.item(f).filter(|f| is_public(f)) {
                            out.insert(format!(
                                "pub field {path}::{i}: {}",
                                ty(&field["inner"]["struct_field"])
                            ));
                        }
                    }
                }
                self.impls(&inner["impls"], &path, out);
            }
            "enum" => {
                let generics = generics(&inner["generics"]);
                out.insert(format!("{}pub enum {path}{generics}", non_exhaustive(item)));
                for v in inner["variants"].as_array().into_iter().flatten() {
                    let Some(variant) = self.item(v) else { continue };
                    let vname = variant["name"].as_str().unwrap_or("_");
                    let vpath = format!("{path}::{vname}");
                    let vkind = &variant["inner"]["variant"]["kind"];
                    let shape = if let Some(fields) = vkind["tuple"].as_array() {
                        let types: Vec<String> = fields
                            .iter()
                            .filter_map(|f| self.item(f))
                            .map(|f| ty(&f["inner"]["struct_field"]))
                            .collect();
                        format!("({})", types.join(", "))
                    } else {
                        String::new()
                    };
                    out.insert(format!("{}pub variant {vpath}{shape}", non_exhaustive(variant)));
                    if let Some(fields) = vkind["struct"]["fields"].as_array() {
                        for f in fields {
                            self.field(f, &vpath, out);
                        }
                    }
                }
                self.impls(&inner["impls"], &path, out);
            }
            "function" => {
                out.insert(fn_line(&path, inner));
            }
            "constant" => {
                out.insert(format!("pub const {path}: {}", ty(&inner["type"])));
            }
            "static" => {
                out.insert(format!("pub static {path}: {}", ty(&inner["type"])));
            }
            "type_alias" => {
                out.insert(format!("pub type {path} = {}", ty(&inner["type"])));
            }
            "trait" => {
                out.insert(format!("pub trait {path}"));
                for i in inner["items"].as_array().into_iter().flatten() {
                    if let Some(item) = self.item(i) {
                        self.assoc(item, &path, out);
                    }
                }
            }
            "macro" => {
                out.insert(format!("pub macro {path}!"));
            }
            other => {
                out.insert(format!("pub {other} {path}"));
            }
        }
    }

    fn field(&self, id: &Value, parent: &str, out: &mut BTreeSet<String>) {
        let Some(field) = self.item(id) else { return };
        if is_public(field) && !is_hidden(field) {
            let name = field["name"].as_str().unwrap_or("_");
            out.insert(format!(
                "pub field {parent}::{name}: {}",
                ty(&field["inner"]["struct_field"])
            ));
        }
    }

    /// A type's inherent methods and constants, and the traits it implements (but the auto
    /// traits and blanket impls every type gets).
    fn impls(&self, impls: &Value, path: &str, out: &mut BTreeSet<String>) {
        for id in impls.as_array().into_iter().flatten() {
            let Some(imp) = self.item(id) else { continue };
            let inner = &imp["inner"]["impl"];
            if inner["is_synthetic"] == true || !inner["blanket_impl"].is_null() {
                continue;
            }
            if inner["trait"].is_null() {
                for i in inner["items"].as_array().into_iter().flatten() {
                    if let Some(item) = self.item(i).filter(|i| is_public(i) && !is_hidden(i)) {
                        self.assoc(item, path, out);
                    }
                }
            } else {
                let negative = if inner["is_negative"] == true { "!" } else { "" };
                out.insert(format!("impl {negative}{} for {path}", resolved(&inner["trait"])));
            }
        }
    }

    fn assoc(&self, item: &Value, path: &str, out: &mut BTreeSet<String>) {
        let name = item["name"].as_str().unwrap_or("_");
        let inner = &item["inner"];
        if let Some(f) = inner.get("function") {
            out.insert(fn_line(&format!("{path}::{name}"), f));
        } else if let Some(c) = inner.get("assoc_const").or_else(|| inner.get("constant")) {
            out.insert(format!("pub const {path}::{name}: {}", ty(&c["type"])));
        } else if inner.get("assoc_type").is_some() {
            out.insert(format!("pub type {path}::{name}"));
        }
    }
}

fn generics(g: &Value) -> String {
    let params: Vec<String> = g["params"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| {
            // `impl Trait` arguments are generics rustdoc made up; the signature shows them.
            p["kind"]["type"]["is_synthetic"] != true
        })
        .map(|p| p["name"].as_str().unwrap_or("_").to_owned())
        .collect();
    if params.is_empty() { String::new() } else { format!("<{}>", params.join(", ")) }
}

/// A function's line: `pub [const] [async] fn path<generics>(inputs) -> output`.
fn fn_line(path: &str, f: &Value) -> String {
    let header = &f["header"];
    let constness = if header["is_const"] == true { "const " } else { "" };
    let asyncness = if header["is_async"] == true { "async " } else { "" };
    format!("pub {constness}{asyncness}fn {path}{}", signature(f))
}

fn signature(f: &Value) -> String {
    let mut s = String::new();
    let sig = &f["sig"];
    let inputs: Vec<String> = sig["inputs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|pair| {
            let name = pair[0].as_str().unwrap_or("_");
            let t = ty(&pair[1]);
            if name == "self" { self_arg(&t) } else { format!("{name}: {t}") }
        })
        .collect();
    let _ = write!(s, "{}({})", generics(&f["generics"]), inputs.join(", "));
    if !sig["output"].is_null() {
        let _ = write!(s, " -> {}", ty(&sig["output"]));
    }
    s
}

fn self_arg(t: &str) -> String {
    match t {
        "Self" => "self".into(),
        "&Self" => "&self".into(),
        "&mut Self" => "&mut self".into(),
        other => format!("self: {other}"),
    }
}

fn resolved(p: &Value) -> String {
    let path = p["path"].as_str().unwrap_or("?");
    format!("{path}{}", args(&p["args"]))
}

fn args(a: &Value) -> String {
    if let Some(ab) = a.get("angle_bracketed") {
        let mut parts: Vec<String> = ab["args"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|arg| {
                if let Some(t) = arg.get("type") {
                    ty(t)
                } else if let Some(l) = arg.get("lifetime") {
                    l.as_str().unwrap_or("'_").to_owned()
                } else if let Some(c) = arg.get("const") {
                    c["expr"].as_str().unwrap_or("_").to_owned()
                } else {
                    "_".into()
                }
            })
            .collect();
        for c in ab["constraints"].as_array().into_iter().flatten() {
            let name = c["name"].as_str().unwrap_or("_");
            if let Some(t) = c["binding"]["equality"].get("type") {
                parts.push(format!("{name} = {}", ty(t)));
            } else {
                parts.push(format!("{name}: {}", bounds(&c["binding"]["constraint"])));
            }
        }
        if parts.is_empty() { String::new() } else { format!("<{}>", parts.join(", ")) }
    } else if let Some(p) = a.get("parenthesized") {
        let inputs: Vec<String> = p["inputs"].as_array().into_iter().flatten().map(ty).collect();
        let output =
            if p["output"].is_null() { String::new() } else { format!(" -> {}", ty(&p["output"])) };
        format!("({}){output}", inputs.join(", "))
    } else {
        String::new()
    }
}

fn bounds(b: &Value) -> String {
    let parts: Vec<String> = b
        .as_array()
        .into_iter()
        .flatten()
        .map(|bound| {
            if let Some(t) = bound.get("trait_bound") {
                let modifier = if t["modifier"] == "maybe" { "?" } else { "" };
                format!("{modifier}{}", resolved(&t["trait"]))
            } else if let Some(l) = bound.get("outlives") {
                l.as_str().unwrap_or("'_").to_owned()
            } else {
                "_".into()
            }
        })
        .collect();
    parts.join(" + ")
}

/// A type as Rust writes it, from rustdoc's JSON.
fn ty(t: &Value) -> String {
    let Some((kind, v)) = t.as_object().and_then(|o| o.iter().next()) else {
        return "_".into();
    };
    match kind.as_str() {
        "resolved_path" => resolved(v),
        "generic" | "primitive" => v.as_str().unwrap_or("_").to_owned(),
        "borrowed_ref" => {
            let lifetime = v["lifetime"].as_str().map(|l| format!("{l} ")).unwrap_or_default();
            let m = if v["is_mutable"] == true { "mut " } else { "" };
            format!("&{lifetime}{m}{}", ty(&v["type"]))
        }
        "raw_pointer" => {
            let m = if v["is_mutable"] == true { "mut" } else { "const" };
            format!("*{m} {}", ty(&v["type"]))
        }
        "slice" => format!("[{}]", ty(v)),
        "array" => format!("[{}; {}]", ty(&v["type"]), v["len"].as_str().unwrap_or("_")),
        "tuple" => {
            let parts: Vec<String> = v.as_array().into_iter().flatten().map(ty).collect();
            format!("({})", parts.join(", "))
        }
        "impl_trait" => format!("impl {}", bounds(v)),
        "dyn_trait" => {
            let traits: Vec<String> = v["traits"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| resolved(&t["trait"]))
                .collect();
            let lifetime = v["lifetime"].as_str().map(|l| format!(" + {l}")).unwrap_or_default();
            format!("dyn {}{lifetime}", traits.join(" + "))
        }
        "qualified_path" => {
            let name = v["name"].as_str().unwrap_or("_");
            let self_type = ty(&v["self_type"]);
            if v["trait"].is_null() {
                format!("{self_type}::{name}")
            } else {
                format!("<{self_type} as {}>::{name}", resolved(&v["trait"]))
            }
        }
        "function_pointer" => {
            let sig = &v["sig"];
            let inputs: Vec<String> =
                sig["inputs"].as_array().into_iter().flatten().map(|p| ty(&p[1])).collect();
            let output = if sig["output"].is_null() {
                String::new()
            } else {
                format!(" -> {}", ty(&sig["output"]))
            };
            format!("fn({}){output}", inputs.join(", "))
        }
        "infer" => "_".into(),
        other => other.to_owned(),
    }
}
