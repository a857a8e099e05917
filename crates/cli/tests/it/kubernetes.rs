//! The Kubernetes example (`examples/kubernetes`), checked without a cluster: the manifests
//! parse as YAML and hold what an Indexed Job of etcdlat shards needs (batch/v1 Job,
//! `completionMode: Indexed`, as many completions as pods at once, the completion index
//! turned into `--shard I/N` with N the completions, the scenario mounted from the
//! ConfigMap where the arguments say), and the scenario in the ConfigMap is valid and
//! splits into that many shards.

use std::path::{Path, PathBuf};

use etcdlat_core::{Scenario, Shard};
use yaml_rust2::{Yaml, YamlLoader};

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kubernetes").join(name)
}

/// The one document of a manifest file.
fn manifest(name: &str) -> Yaml {
    let path = example(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut docs =
        YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{name} is not YAML: {e}"));
    assert_eq!(docs.len(), 1, "{name} holds one manifest");
    docs.remove(0)
}

/// The string at a path of keys, or a panic naming the path.
fn string<'a>(doc: &'a Yaml, path: &[&str]) -> &'a str {
    at(doc, path).as_str().unwrap_or_else(|| panic!("{} is not a string", path.join(".")))
}

fn int(doc: &Yaml, path: &[&str]) -> i64 {
    at(doc, path).as_i64().unwrap_or_else(|| panic!("{} is not an integer", path.join(".")))
}

fn list<'a>(doc: &'a Yaml, path: &[&str]) -> &'a [Yaml] {
    at(doc, path)
        .as_vec()
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("{} is not a list", path.join(".")))
}

fn at<'a>(doc: &'a Yaml, path: &[&str]) -> &'a Yaml {
    let mut v = doc;
    for key in path {
        v = &v[*key];
        assert!(!v.is_badvalue(), "{} is missing", path.join("."));
    }
    v
}

/// The item of a list whose `name` is `name`.
fn named<'a>(items: &'a [Yaml], name: &str) -> &'a Yaml {
    items
        .iter()
        .find(|i| i["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("nothing named {name:?}"))
}

#[test]
fn the_indexed_job_runs_one_shard_per_completion_index() {
    let job = manifest("job.yaml");
    assert_eq!(string(&job, &["apiVersion"]), "batch/v1");
    assert_eq!(string(&job, &["kind"]), "Job");
    assert!(!string(&job, &["metadata", "name"]).is_empty());
    let spec = at(&job, &["spec"]);
    assert_eq!(string(spec, &["completionMode"]), "Indexed");
    let completions = int(spec, &["completions"]);
    assert!(completions >= 2, "a distributed run has shards");
    assert_eq!(
        int(spec, &["parallelism"]),
        completions,
        "every shard runs at once: the barrier waits for all of them"
    );
    let pod = at(spec, &["template", "spec"]);
    assert_eq!(string(pod, &["restartPolicy"]), "Never");
    let containers = list(pod, &["containers"]);
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    assert!(string(c, &["image"]).contains("etcdlat"), "the image is etcdlat's");
    assert!(c["command"].is_badvalue(), "the image's entrypoint is the etcdlat binary");

    // The completion index reaches the arguments through an environment variable.
    let env = list(c, &["env"]);
    let index_var = env
        .iter()
        .find(|e| {
            e["valueFrom"]["fieldRef"]["fieldPath"].as_str()
                == Some("metadata.annotations['batch.kubernetes.io/job-completion-index']")
        })
        .and_then(|e| e["name"].as_str())
        .expect("an env var holds the completion index");
    let args: Vec<&str> = list(c, &["args"])
        .iter()
        .map(|a| a.as_str().expect("every argument is a string"))
        .collect();
    assert_eq!(args[0], "run");
    assert!(
        args.contains(&format!("--shard=$({index_var})/{completions}").as_str()),
        "--shard is the completion index of the completions: {args:?}"
    );
    // Every variable an argument refers to is defined.
    for arg in &args {
        for var in arg.split("$(").skip(1).filter_map(|s| s.split_once(')')).map(|(v, _)| v) {
            named(env, var);
        }
    }
    assert!(args.iter().any(|a| a.starts_with("--barrier=")), "the shards start together");
    assert!(args.iter().any(|a| a.starts_with("--endpoints=")), "one cluster for all shards");
    assert!(args.contains(&"--json=-"), "the report goes to the pod's log");
    assert!(args.contains(&"--quiet"), "and nothing else does");

    // The scenario argument is the ConfigMap's key, where the volume is mounted.
    let scenario_arg = args[1];
    let mount = list(c, &["volumeMounts"])
        .iter()
        .find(|m| {
            m["mountPath"]
                .as_str()
                .is_some_and(|p| scenario_arg.starts_with(&format!("{}/", p.trim_end_matches('/'))))
        })
        .expect("the scenario is in a mounted volume");
    let volume = named(list(pod, &["volumes"]), string(mount, &["name"]));
    let map_name = string(volume, &["configMap", "name"]);
    let key = scenario_arg.rsplit('/').next().unwrap();

    let config = manifest("configmap.yaml");
    assert_eq!(string(&config, &["apiVersion"]), "v1");
    assert_eq!(string(&config, &["kind"]), "ConfigMap");
    assert_eq!(string(&config, &["metadata", "name"]), map_name, "the volume is this ConfigMap");
    let text = string(&config, &["data", key]);
    let scenario = Scenario::from_toml_str(text).unwrap_or_else(|e| panic!("{key}: {e}"));
    let n = u32::try_from(completions).unwrap();
    for i in 0..n {
        let shard = Shard::new(i, n).unwrap();
        for run in scenario.expand().unwrap() {
            shard.part(&run).unwrap_or_else(|e| panic!("{key} as shard {shard}: {e}"));
        }
    }
}

#[test]
fn the_dockerfile_builds_the_binary_into_a_small_image() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Dockerfile");
    let text = std::fs::read_to_string(&path).expect("a Dockerfile at the repository root");
    let stages: Vec<&str> = text.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert!(stages.len() >= 2, "multi-stage: {stages:?}");
    assert!(text.contains("cargo build --release --locked -p etcdlat-cli"));
    let last = stages.last().unwrap();
    assert!(last.contains("distroless"), "the final image is small: {last}");
    assert!(text.contains("ENTRYPOINT [\"/usr/local/bin/etcdlat\"]"));
}
