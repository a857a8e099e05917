//! `--html` and `--plots` on a real run, and the page opened in a real browser (headless
//! Chromium): it loads without a console message (its content security policy would log
//! any load it blocked), its DOM holds the plots, and it renders to a screenshot. The
//! screenshot is kept as `html-report.png` in the target directory's test scratch space
//! (`CARGO_TARGET_TMPDIR`) for a person to look at. The plots of a short run: a point per
//! interval, titles that name the operation once, one line when latency is service time.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::{count, etcdlat, only_run, read_report};

/// The browser, from Debian's `chromium` package.
const CHROMIUM: &str = "chromium";

/// Chromium on PATH; fails (never skips) when it is missing, saying how to install it.
fn chromium() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths).map(|dir| dir.join(CHROMIUM)).find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "`{CHROMIUM}` is not on PATH: this test opens the HTML report in headless \
                 Chromium. Install the Debian package `chromium` (apt-get install chromium), \
                 or run .ci/deps --tests"
            )
        })
}

/// Headless Chromium with a throwaway profile, no background traffic, and the page's
/// console messages logged to stderr (`INFO:CONSOLE`).
fn browser(bin: &Path, profile: &Path) -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .timeout(Duration::from_secs(90));
    cmd
}

/// The console messages of the page in Chromium's log.
fn console_messages(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_html_report_loads_in_a_browser() {
    if etcdlat_testkit::skip() {
        return;
    }
    let chromium = chromium();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("r.html");
    let json = dir.path().join("r.json");
    let plots = dir.path().join("plots");
    std::fs::create_dir(&plots).unwrap();

    etcdlat()
        .args(["--local", "put", "--total=200", "--html"])
        .arg(&page)
        .arg("--plots")
        .arg(&plots)
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let report = read_report(&json);
    assert_eq!(count(only_run(&report), "/ops/put/ok"), 200);

    let mut written: Vec<String> = std::fs::read_dir(&plots)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(written, ["1-put-latency.svg", "1-put-spectrum.svg", "1-throughput.svg"]);
    for name in &written {
        let svg = std::fs::read_to_string(plots.join(name)).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"), "{name}: {svg}");
    }

    let url = format!("file://{}", page.display());
    let profile = dir.path().join("profile");
    let out = browser(&chromium, &profile).arg("--dump-dom").arg(&url).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium --dump-dom failed: {}\n{stderr}", out.status);
    assert_eq!(console_messages(&out.stderr), Vec::<String>::new(), "the page logged messages");
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(dom.contains("<h2>Run 1: put</h2>"), "the run's heading in the DOM:\n{dom}");
    assert!(dom.contains("</footer>"), "the whole page was loaded:\n{dom}");
    // Latency per interval and spectrum of the puts, throughput, and the resource plots of
    // the local cluster's members and the client; parsed as SVG, not text.
    let svgs = 3 + etcdlat_render::plot::Resource::ALL.len();
    assert_eq!(dom.matches("<svg ").count(), svgs, "{svgs} inline SVGs:\n{dom}");
    assert_eq!(dom.matches("</svg>").count(), svgs);
    assert!(dom.contains("CPU over time"), "{dom}");
    assert!(dom.contains("put latency by percentile (200 requests)"), "{dom}");

    let png = dir.path().join("r.png");
    let out = browser(&chromium, &profile)
        .arg(format!("--screenshot={}", png.display()))
        .arg("--window-size=1280,2000")
        .arg(&url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "chromium --screenshot failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(console_messages(&out.stderr), Vec::<String>::new(), "the page logged messages");
    let image = std::fs::read(&png).expect("the screenshot was written");
    assert_eq!(&image[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let dimension = |at: usize| u32::from_be_bytes(image[at..at + 4].try_into().unwrap());
    assert_eq!((dimension(16), dimension(20)), (1280, 2000), "the window's size");
    // A blank page compresses to almost nothing; tables and plots do not.
    assert!(image.len() > 50_000, "a screenshot of {} bytes looks blank", image.len());
    let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("html-report.png");
    std::fs::copy(&png, &kept).unwrap();
}

/// The points of each `<polyline>` drawn in `stroke`, and the contents of every `<text>`, of
/// an SVG as plotters writes it (one element per line).
fn polylines_and_texts(svg: &str, stroke: &str) -> (Vec<usize>, Vec<String>) {
    let points = svg
        .lines()
        .filter(|l| l.contains("<polyline") && l.contains(&format!("stroke=\"{stroke}\"")))
        .map(|l| {
            let list = l.split("points=\"").nth(1).and_then(|p| p.split('"').next());
            list.unwrap_or("").split_whitespace().count()
        })
        .collect();
    let texts = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>').and_then(|(_, rest)| rest.split_once("</text>")))
        .map(|(text, _)| text.trim().to_owned())
        .collect();
    (points, texts)
}

#[test]
fn plots_of_a_short_run_have_points_and_plain_titles() {
    if etcdlat_testkit::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let plots = dir.path().join("plots");
    let json = dir.path().join("r.json");
    etcdlat()
        .args(["--local", "put", "--duration=800ms", "--clients=4", "--plots"])
        .arg(&plots)
        .arg("--json")
        .arg(&json)
        .assert()
        .success();
    let report = read_report(&json);
    let run = only_run(&report);
    let intervals = run["ops"]["put"]["intervals"].as_array().unwrap().len();
    assert!(intervals >= 50, "{intervals} intervals in 0.8 s ({})", run["interval_s"]);

    // The latency's p50 (blue) and the throughput's ok/s (blue): a point per interval,
    // besides the legend's two-point mark.
    let read = |name: &str| std::fs::read_to_string(plots.join(name)).unwrap();
    let (p50, texts) = polylines_and_texts(&read("1-put-latency.svg"), "#1F77B4");
    let drawn: usize = p50.iter().filter(|&&n| n > 2).sum();
    assert!(drawn >= 50, "{drawn} points of p50 in {p50:?}");
    assert!(texts.contains(&"put latency per interval".to_owned()), "{texts:?}");
    assert!(!texts.iter().any(|t| t.contains("put: put")), "{texts:?}");
    let (ok, texts) = polylines_and_texts(&read("1-throughput.svg"), "#1F77B4");
    assert!(ok.iter().any(|&n| n >= 50), "{ok:?}");
    assert!(texts.contains(&"put: throughput per interval".to_owned()), "{texts:?}");

    // A closed loop: latency is service time, one line, and the legend says so.
    let (service, texts) = polylines_and_texts(&read("1-put-spectrum.svg"), "#1F77B4");
    assert!(service.is_empty(), "no second line: {service:?}");
    let legend = "latency = service time (each request sent when intended)".to_owned();
    assert!(texts.contains(&legend), "{texts:?}");
    assert!(texts.iter().any(|t| t.starts_with("put latency by percentile (")), "{texts:?}");
}
