//! The command line, fuzzed with proptest: argument vectors made of the real flag names (read
//! from clap's own definition), subcommands, edge values and arbitrary text. Parsing never
//! panics (clap's debug assertions included), every clap error renders as one line, and
//! every parsed command line is turned into an action or a one-line error, never a panic.

use std::path::PathBuf;

use clap::CommandFactory;
use proptest::prelude::*;
use proptest::test_runner::Config;

use crate::command_line::{Cli, one_line};
use crate::plan::{Action, EtcdSources};

/// Every long flag and subcommand name clap knows, at any depth.
fn vocabulary() -> Vec<String> {
    fn walk(cmd: &clap::Command, out: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            if let Some(long) = arg.get_long() {
                out.push(format!("--{long}"));
            }
        }
        for sub in cmd.get_subcommands() {
            out.push(sub.get_name().to_owned());
            walk(sub, out);
        }
    }
    let mut out = Vec::new();
    walk(&Cli::command(), &mut out);
    out.sort();
    out.dedup();
    out
}

/// Values worth trying in any flag: edges, wrong types, things that look right.
const VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "10",
    "4294967296",
    "99999999999999999999",
    "1e300",
    "-0",
    "nan",
    "inf",
    "abc",
    "",
    " ",
    "1s",
    "0s",
    "-3s",
    "250ms",
    "999999999999h",
    "2MiB",
    "1MB",
    "1 parsec",
    "leader",
    "followers",
    "follower:0",
    "follower:2",
    "member:",
    "all",
    "moon",
    "127.0.0.1:2379",
    "localhost",
    "http://h:1",
    "https://h:1",
    "unix://x:1",
    ":2379",
    "h:0",
    "h:65536",
    "a,b",
    "put-1mb",
    "etcd-perf-guide",
    "scenarios/put-1mb.toml",
    "0/2",
    "1/0",
    "3/2",
    "x/y",
    "2026-01-01T00:00:00Z",
    "yesterday",
    "p99 < \"20ms\"",
    "put.p99 <",
    "errors == 0",
    "true",
    "false",
    "-",
    "/nonexistent/x.json",
    "s",
    "l",
    "c",
    "r",
    "ss",
    "stm",
    "lock-rpc",
    "k",
    "=",
    "--",
    "-h",
    "--help",
    "--version",
];

/// One argument: a flag or subcommand name, a `--flag=value`, a value, or arbitrary text (not
/// an absolute path, so that nothing outside the test's reach is read).
fn argument(vocabulary: Vec<String>) -> impl Strategy<Value = String> {
    let names = proptest::sample::select(vocabulary);
    let values = proptest::sample::select(VALUES);
    prop_oneof![
        4 => names.clone(),
        4 => (names, values.clone()).prop_map(|(n, v)| format!("{n}={v}")),
        3 => values.prop_map(str::to_owned),
        1 => any::<String>().prop_map(|s| s.trim_start_matches('/').to_owned()),
    ]
}

fn check(args: &[String]) {
    let argv = std::iter::once("etcdlat".to_owned()).chain(args.iter().cloned());
    match Cli::parse_args(argv) {
        Ok(cli) => {
            let sources = EtcdSources {
                system: PathBuf::from("/nonexistent/etcd"),
                search_path: Vec::new(),
                cache: Some(PathBuf::from("/nonexistent/cache")),
            };
            if let Err(e) = Action::from_cli(cli, &sources) {
                let line = format!("{e:#}");
                assert!(!line.is_empty() && !line.contains('\n'), "{args:?}: {line:?}");
            }
        }
        Err(e) => {
            let line = one_line(&e);
            assert!(!line.contains('\n'), "{args:?}: {line:?}");
            if e.use_stderr() {
                assert!(!line.is_empty(), "{args:?}: an empty error");
            }
        }
    }
}

proptest! {
    #![proptest_config(Config { cases: 1024, failure_persistence: None, ..Config::default() })]

    #[test]
    fn argument_vectors_never_panic(
        args in proptest::collection::vec(argument(vocabulary()), 0..8)
    ) {
        check(&args);
    }

    #[test]
    fn arbitrary_argument_vectors_never_panic(
        args in proptest::collection::vec(any::<String>().prop_map(|s| s.trim_start_matches('/').to_owned()), 0..6)
    ) {
        check(&args);
    }
}

#[test]
fn the_vocabulary_is_clap_s() {
    let v = vocabulary();
    for name in ["--endpoints", "--conns", "--val-size", "put", "run", "--scale", "watch-latency"] {
        assert!(v.iter().any(|n| n == name), "{name} in {v:?}");
    }
}
