//! SIGINT (Ctrl-C), SIGTERM and SIGHUP during a run: exit code 130 soon after, the report
//! written and marked interrupted, counting exactly what reached the server, and a throwaway
//! etcd (even one a fault step holds paused) killed and its directory removed. A stop while
//! the throwaway etcd starts or while the setup writes ends at once, with a report of no
//! runs.
//!
//! etcdlat runs in a process group of its own and the signal goes to the whole group, as a
//! terminal sends Ctrl-C to its foreground group.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use etcdlat_testkit::{Etcd, eventually};

use crate::{count, flag, only_run, read_report};

/// How long etcdlat may take to stop after a signal.
const STOP_WITHIN: Duration = Duration::from_secs(5);
/// How long a run may take to get going before the test gives up on it.
const START_WITHIN: Duration = Duration::from_secs(20);

/// etcdlat running in the background in its own process group, stopped with SIGTERM (so
/// that it still removes its throwaway etcd) if the test ends while it runs.
struct Running {
    child: Child,
    stderr: PathBuf,
}

impl Running {
    /// Starts `etcdlat args` with `TMPDIR=tmpdir`; its standard error goes to `stderr`.
    fn spawn(args: &[&str], tmpdir: &Path, stderr: PathBuf) -> Self {
        let child = Command::new(assert_cmd::cargo::cargo_bin("etcdlat"))
            .args(args)
            .env_remove("ETCDLAT_LOG")
            .env("TMPDIR", tmpdir)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        Self { child, stderr }
    }

    /// Sends `signal` to etcdlat's process group.
    fn signal(&self, signal: &str) -> bool {
        Command::new("kill")
            .arg(format!("-{signal}"))
            .arg("--")
            .arg(format!("-{}", self.child.id()))
            .status()
            .is_ok_and(|s| s.success())
    }

    /// The exit status, if etcdlat exits within `within`.
    fn wait(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            // Also called from drop, which must not panic.
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What `probe` returns once `done` holds of it, or after [`START_WITHIN`]; panics, with
    /// etcdlat's stderr, if etcdlat exits meanwhile.
    async fn poll<T>(&mut self, mut probe: impl AsyncFnMut() -> T, done: impl Fn(&T) -> bool) -> T {
        let probe = async || {
            self.assert_running();
            probe().await
        };
        eventually(START_WITHIN, probe, done).await
    }

    /// Panics, with etcdlat's stderr, if it has exited.
    fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!("etcdlat exited early with {status}:\n{}", self.stderr());
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Sends `signal` and checks that etcdlat exits with code 130 within [`STOP_WITHIN`].
    fn stop(&mut self, signal: &str) {
        assert!(self.signal(signal), "sending SIG{signal}");
        let sent = Instant::now();
        let status = self.wait(STOP_WITHIN).unwrap_or_else(|| {
            panic!("etcdlat still running {:?} after SIG{signal}", sent.elapsed())
        });
        assert_eq!(
            status.code(),
            Some(130),
            "exit code 130 after SIG{signal}; stderr:\n{}",
            self.stderr()
        );
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            if !(self.signal("TERM") && self.wait(STOP_WITHIN).is_some()) {
                let _ = self.child.kill();
            }
            let _ = self.child.wait();
        }
    }
}

/// The command lines (arguments) of the processes whose command line mentions `dir`.
fn processes_mentioning(dir: &Path) -> Vec<Vec<String>> {
    let dir = dir.display().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if !entry.file_name().to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // Processes may exit while we look.
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .filter(|a| !a.is_empty())
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.iter().any(|a| a.contains(&dir)) {
            found.push(args);
        }
    }
    found
}

/// The highest store revision among the members of the throwaway etcd whose command line
/// mentions `dir` (its data dir), if one answers.
async fn throwaway_revision(dir: &Path) -> Option<i64> {
    let mut highest = None;
    for args in processes_mentioning(dir) {
        let url =
            args.iter().position(|a| a == "--listen-client-urls").and_then(|i| args.get(i + 1));
        if let Some(url) = url {
            highest = highest.max(revision_at(url).await);
        }
    }
    highest
}

/// Whether a store of this revision holds puts: revision 1 is the empty store, and each put
/// adds one.
fn holds_puts(revision: &Option<i64>) -> bool {
    revision.is_some_and(|r| r >= 3)
}

/// The store revision at `url`, if etcd answers there.
async fn revision_at(url: &str) -> Option<i64> {
    let opts = etcd_client::ConnectOptions::new()
        .with_connect_timeout(Duration::from_millis(500))
        .with_timeout(Duration::from_secs(1));
    let mut client = etcd_client::Client::connect([url], Some(opts)).await.ok()?;
    let resp = client.get("\0etcdlat-test-probe", None).await.ok()?;
    Some(resp.header()?.revision())
}

#[tokio::test]
async fn sigint_stops_a_run_and_reports_what_reached_the_server() {
    if etcdlat_testkit::skip() {
        return;
    }
    stops_a_run_and_reports_what_reached_the_server("INT").await;
}

#[tokio::test]
async fn sigterm_stops_a_run_and_reports_what_reached_the_server() {
    if etcdlat_testkit::skip() {
        return;
    }
    stops_a_run_and_reports_what_reached_the_server("TERM").await;
}

async fn stops_a_run_and_reports_what_reached_the_server(signal: &str) {
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let before = etcd.revision().await;
    let endpoints = format!("--endpoints={}", etcd.endpoint());
    let args = [
        endpoints.as_str(),
        "--clients=4",
        "put",
        "--duration=60s",
        "--json",
        json.to_str().unwrap(),
    ];
    let mut run = Running::spawn(&args, dir.path(), dir.path().join("stderr"));

    // Interrupt in the middle of the run, once puts are landing.
    let revision = run.poll(async || etcd.revision().await, |&r| r >= before + 100).await;
    assert!(revision >= before + 100, "no puts reached the server within {START_WITHIN:?}");
    run.stop(signal);

    let report = read_report(&json);
    let report = only_run(&report);
    assert!(flag(report, "/interrupted"));
    let ok = count(report, "/ops/put/ok");
    assert!(ok > 0, "the puts before SIG{signal} are counted");
    assert_eq!(
        u64::try_from(etcd.revision().await - before).unwrap(),
        ok,
        "the server holds exactly the puts the report counts as ok (errors: {})",
        report["ops"]["put"]["errors"]
    );
}

#[tokio::test]
async fn sigint_stops_a_throwaway_etcd_and_removes_it() {
    if etcdlat_testkit::skip() {
        return;
    }
    stops_a_throwaway_etcd_and_removes_it("INT").await;
}

#[tokio::test]
async fn sigterm_stops_a_throwaway_etcd_and_removes_it() {
    if etcdlat_testkit::skip() {
        return;
    }
    stops_a_throwaway_etcd_and_removes_it("TERM").await;
}

/// A closed terminal (SIGHUP) tears the throwaway etcd down too: it runs in a process group
/// of its own, so the hangup reaches only etcdlat.
#[tokio::test]
async fn sighup_stops_a_throwaway_etcd_and_removes_it() {
    if etcdlat_testkit::skip() {
        return;
    }
    stops_a_throwaway_etcd_and_removes_it("HUP").await;
}

async fn stops_a_throwaway_etcd_and_removes_it(signal: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let args = ["run", "put-1mb", "--duration=60s", "--json", json.to_str().unwrap()];
    let mut run = Running::spawn(&args, tmp.path(), out.path().join("stderr"));

    // Interrupt once the throwaway etcd (found by its data dir in TMPDIR) holds some puts.
    let revision = run.poll(async || throwaway_revision(tmp.path()).await, holds_puts).await;
    assert!(holds_puts(&revision), "no puts reached a throwaway etcd within {START_WITHIN:?}");
    run.stop(signal);

    let report = read_report(&json);
    let report = only_run(&report);
    assert!(flag(report, "/interrupted"));
    assert!(flag(report, "/target/local"));
    assert!(count(report, "/ops/put/ok") > 0, "the puts before SIG{signal} are counted");
    // The throwaway etcd is outside etcdlat's process group: the signal stops etcdlat, which
    // finishes the requests in flight before it tears etcd down.
    assert_eq!(
        count(report, "/ops/put/errors_total"),
        0,
        "etcd served until etcdlat stopped (errors: {})",
        report["ops"]["put"]["errors"]
    );

    assert_eq!(processes_mentioning(tmp.path()), Vec::<Vec<String>>::new(), "no etcd left running");
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("etcdlat-"))
        .collect();
    assert!(left.is_empty(), "the throwaway etcd's directory is removed: {left:?}");
}

#[tokio::test]
async fn sigint_while_a_throwaway_etcd_starts_stops_at_once() {
    // An "etcd" that never becomes ready: without the stop check, etcdlat would wait out
    // the 30 s ready timeout and exit 2. It says when it has been started.
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let started = out.path().join("etcd-started");
    let fake = tmp.path().join("etcd");
    std::fs::write(&fake, format!("#!/bin/sh\ntouch '{}'\nexec sleep 40\n", started.display()))
        .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let json = out.path().join("r.json");
    let child = Command::new(assert_cmd::cargo::cargo_bin("etcdlat"))
        .args(["run", "put-1mb", "--json", json.to_str().unwrap()])
        .env_remove("ETCDLAT_LOG")
        .env("ETCD_BIN", &fake)
        .env("TMPDIR", tmp.path())
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(out.path().join("stderr")).unwrap())
        .spawn()
        .unwrap();
    let mut run = Running { child, stderr: out.path().join("stderr") };
    // Interrupt while etcdlat waits for the etcd it started to be ready.
    let spawned = run.poll(async || started.exists(), |&spawned| spawned).await;
    assert!(spawned, "etcdlat did not start etcd within {START_WITHIN:?}");
    run.stop("INT");
    let report = read_report(&json);
    assert_eq!(report["runs"].as_array().map(Vec::len), Some(0), "nothing was measured");
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("etcdlat-"))
        .collect();
    assert!(leftovers.is_empty(), "temp dirs left behind: {leftovers:?}");
}

#[tokio::test]
async fn sigint_during_setup_exits_130_with_a_report() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("big-setup.toml");
    std::fs::write(
        &scenario,
        "[load]\ntotal = 10\n[op.range]\nkey = \"s/\"\nprefix = true\n\
         [setup]\ntotal = 10000000\n[setup.put]\nprefix = \"s/\"\n",
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let endpoints = format!("--endpoints={}", etcd.endpoint());
    let args =
        ["run", scenario.to_str().unwrap(), endpoints.as_str(), "--json", json.to_str().unwrap()];
    let before = etcd.revision().await;
    let mut run = Running::spawn(&args, dir.path(), dir.path().join("stderr"));
    let revision = run.poll(async || etcd.revision().await, |&r| r >= before + 50).await;
    assert!(revision >= before + 50, "setup did not start");
    run.stop("INT");
    assert_eq!(read_report(&json)["runs"].as_array().map(Vec::len), Some(0));
}

#[tokio::test]
async fn sigterm_while_a_fault_step_holds_a_member_paused_leaves_nothing_behind() {
    if etcdlat_testkit::skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let scenario = out.path().join("pause.toml");
    // The follower stays paused until the run ends (no `for`, no resume step).
    std::fs::write(
        &scenario,
        "[cluster]\nmembers = 3\n[load]\nclients = 2\nduration = \"60s\"\n[op.put]\n\
         [[faults]]\nat = \"0s\"\naction = \"pause\"\nmember = \"follower\"\n",
    )
    .unwrap();
    let json = out.path().join("r.json");
    let args = ["run", scenario.to_str().unwrap(), "--json", json.to_str().unwrap()];
    let mut run = Running::spawn(&args, tmp.path(), out.path().join("stderr"));

    // Stop once a member of the throwaway cluster is stopped (state T in /proc): the step
    // runs as measurement starts, so the run is under way. (Its puts may all wait on the
    // paused member, so the revision would not show it.)
    let paused = async || processes_mentioning(tmp.path()).len() == 3 && any_stopped(tmp.path());
    let paused = run.poll(paused, |&paused| paused).await;
    assert!(paused, "no member was paused within {START_WITHIN:?}");
    run.stop("TERM");
    let report = read_report(&json);
    let report = only_run(&report);
    assert!(flag(report, "/interrupted"));
    assert_eq!(report["faults"][0]["action"], "pause", "{report:#}");
    assert!(report["faults"][0]["resumed_s"].as_f64().is_some(), "resumed at the end: {report:#}");
    assert_eq!(processes_mentioning(tmp.path()), Vec::<Vec<String>>::new(), "no etcd left running");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "temp dirs left behind: {left:?}");
}

/// Whether a process whose command line mentions `dir` is stopped (SIGSTOP).
fn any_stopped(dir: &Path) -> bool {
    let dir = dir.display().to_string();
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        String::from_utf8_lossy(&cmdline).contains(&dir)
            // The state follows the command name in parentheses.
            && stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('T'))
    })
}

#[tokio::test]
async fn sigint_with_an_emulated_network_leaves_no_proxy_and_no_etcd_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("r.json");
    let args = [
        "--members=3",
        "--peer-latency=2ms",
        "--client-latency=1ms",
        "run",
        "put-1mb",
        "--duration=60s",
        "--json",
        json.to_str().unwrap(),
    ];
    let mut run = Running::spawn(&args, tmp.path(), out.path().join("stderr"));
    let revision = run.poll(async || throwaway_revision(tmp.path()).await, holds_puts).await;
    assert!(holds_puts(&revision), "no puts reached a throwaway etcd within {START_WITHIN:?}");
    run.stop("INT");

    let report = read_report(&json);
    let report = only_run(&report);
    assert!(flag(report, "/interrupted"));
    assert_eq!(report["target"]["network"]["config"]["peer-latency"], "2ms");
    // The members were reached through the proxies, whose ports are closed now.
    let endpoints = report["target"]["endpoints"].as_array().unwrap();
    assert!(!endpoints.is_empty());
    for endpoint in endpoints {
        let addr = endpoint.as_str().unwrap().trim_start_matches("http://");
        assert!(std::net::TcpStream::connect(addr).is_err(), "{addr} still listens after the run");
    }
    assert_eq!(processes_mentioning(tmp.path()), Vec::<Vec<String>>::new(), "no etcd left running");
}

/// `kill -9` (the OOM killer, a CI timeout) runs no destructor: the members still die with
/// etcdlat (their guard kills their process group), and the next etcdlat that starts a
/// throwaway cluster removes the dir left behind, saying so in one line.
#[tokio::test]
async fn sigkill_leaves_no_etcd_and_the_next_start_removes_its_dir() {
    if etcdlat_testkit::skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let args = ["--local", "--members=3", "put", "--duration=60s"];
    let mut run = Running::spawn(&args, tmp.path(), out.path().join("stderr"));
    let members =
        async || (processes_mentioning(tmp.path()).len(), throwaway_revision(tmp.path()).await);
    let (running, revision) =
        run.poll(members, |(running, revision)| *running == 3 && holds_puts(revision)).await;
    assert!(
        running == 3 && holds_puts(&revision),
        "3 members serving puts: {running}, {revision:?}"
    );
    let dirs = |tmp: &Path| -> Vec<PathBuf> {
        let entries = std::fs::read_dir(tmp).unwrap().flatten();
        entries.map(|e| e.path()).filter(|p| p.is_dir()).collect()
    };
    let left = dirs(tmp.path());
    assert_eq!(left.len(), 1, "one cluster dir: {left:?}");

    // SIGKILL to etcdlat alone, not to its process group.
    run.child.kill().unwrap();
    run.child.wait().unwrap();
    let gone = eventually(STOP_WITHIN, async || processes_mentioning(tmp.path()), Vec::is_empty);
    assert_eq!(gone.await, Vec::<Vec<String>>::new(), "no etcd outlives a killed etcdlat");
    assert_eq!(dirs(tmp.path()), left, "nothing removed the dir of a killed etcdlat");

    let next = crate::etcdlat()
        .env("TMPDIR", tmp.path())
        .args(["--local", "put", "--total=10"])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&next.get_output().stderr).into_owned();
    let said: Vec<&str> = stderr.lines().filter(|l| l.contains("removed")).collect();
    assert_eq!(said.len(), 1, "one line says what was removed:\n{stderr}");
    assert!(said[0].contains(&left[0].display().to_string()), "{stderr}");
    assert_eq!(dirs(tmp.path()), Vec::<PathBuf>::new(), "both runs' dirs are gone");
}
