//! Matrix expansion (`[matrix]`): one run per combination of the axes' values.

use super::{Scenario, ScenarioError};

impl Scenario {
    /// Every run of the scenario: one per combination of its `[matrix]` axes, in order (the
    /// first axis varies slowest), each validated and named after the values it takes
    /// (`put [clients=1000, val-size=256]`); the scenario itself when it has no matrix.
    ///
    /// # Errors
    /// [`ScenarioError::Invalid`] naming the matrix axis when a combination cannot be run.
    pub fn expand(&self) -> Result<Vec<Scenario>, ScenarioError> {
        if self.matrix.is_empty() {
            return Ok(vec![self.clone()]);
        }
        let mut axes = Vec::new();
        flatten_axes(&self.matrix, String::new(), &mut axes)?;
        let mut base = self.clone();
        base.matrix.clear();
        let base_value = toml::Value::try_from(&base)
            .map_err(|e| ScenarioError::invalid("matrix", format!("cannot apply: {e}")))?;
        let combinations: usize = axes.iter().map(|(_, values)| values.len()).product();
        if combinations > 10_000 {
            return Err(ScenarioError::invalid(
                "matrix",
                format!("{combinations} combinations is too many"),
            ));
        }
        let mut runs = Vec::with_capacity(combinations);
        for n in 0..combinations {
            let mut value = base_value.clone();
            let mut labels = Vec::with_capacity(axes.len());
            let mut rest = n;
            let mut picks = vec![0; axes.len()];
            for (i, (_, values)) in axes.iter().enumerate().rev() {
                picks[i] = rest % values.len();
                rest /= values.len();
            }
            for ((path, values), pick) in axes.iter().zip(&picks) {
                let chosen = &values[*pick];
                if path == CASE_AXIS {
                    labels.push(apply_case(&mut value, chosen, *pick)?);
                } else {
                    set_path(&mut value, path, chosen.clone());
                    labels.push(format!(
                        "{}={}",
                        path.rsplit('.').next().unwrap_or(path),
                        label(chosen)
                    ));
                }
            }
            let field = format!("matrix.{}", axes.first().map_or("", |(p, _)| p.as_str()));
            let mut run: Scenario = value.try_into().map_err(|e: toml::de::Error| {
                ScenarioError::invalid(
                    &field,
                    format!("[{}]: {}", labels.join(", "), e.message().trim()),
                )
            })?;
            run.name = format!("{} [{}]", base.name, labels.join(", "));
            run.validate().map_err(|e| match e {
                ScenarioError::Invalid { field: f, message, .. } => ScenarioError::invalid(
                    &field,
                    format!("[{}]: {f}: {message}", labels.join(", ")),
                ),
                other => other,
            })?;
            runs.push(run);
        }
        Ok(runs)
    }
}

/// The matrix axis whose values are whole cases: tables whose keys each replace that part of
/// the scenario (`load = { conns = 1, clients = 1, total = 10000 }` replaces `[load]`), so
/// that rows which differ in several parameters at once (like a published table's) are one
/// axis. A case's `label` names it in the run's name.
pub const CASE_AXIS: &str = "case";

fn apply_case(
    root: &mut toml::Value,
    case: &toml::Value,
    index: usize,
) -> Result<String, ScenarioError> {
    let toml::Value::Table(case) = case else {
        return Err(ScenarioError::invalid(
            "matrix.case",
            "every case is a table of scenario parts",
        ));
    };
    let mut name = format!("case {}", index + 1);
    for (key, value) in case {
        match (key.as_str(), value) {
            ("label", toml::Value::String(l)) => name.clone_from(l),
            ("label", _) => {
                return Err(ScenarioError::invalid("matrix.case.label", "must be a string"));
            }
            _ => set_path(root, key, value.clone()),
        }
    }
    Ok(name)
}

/// The axes of a matrix table: every array is an axis; tables nest (so both
/// `"load.clients" = [..]` and `load.clients = [..]` name the same axis).
fn flatten_axes(
    table: &toml::Table,
    prefix: String,
    out: &mut Vec<(String, Vec<toml::Value>)>,
) -> Result<(), ScenarioError> {
    for (key, value) in table {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match value {
            toml::Value::Array(values) if values.is_empty() => {
                return Err(ScenarioError::invalid(
                    &format!("matrix.{path}"),
                    "an axis needs at least one value",
                ));
            }
            toml::Value::Array(values) => out.push((path, values.clone())),
            toml::Value::Table(t) => flatten_axes(t, path, out)?,
            _ => {
                return Err(ScenarioError::invalid(
                    &format!("matrix.{path}"),
                    "an axis is a list of values, like [1, 1000]",
                ));
            }
        }
    }
    Ok(())
}

/// Sets a dotted path in a TOML value, creating tables on the way.
fn set_path(root: &mut toml::Value, path: &str, value: toml::Value) {
    let mut cur = root;
    let mut parts = path.split('.').peekable();
    while let Some(part) = parts.next() {
        if !cur.is_table() {
            *cur = toml::Value::Table(toml::Table::new());
        }
        let toml::Value::Table(t) = cur else { return };
        if parts.peek().is_none() {
            t.insert(part.to_owned(), value);
            return;
        }
        cur = t.entry(part.to_owned()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
    }
}

/// How a matrix value appears in a run's name.
fn label(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        toml::Value::Table(t) => t.keys().next().cloned().unwrap_or_default(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Targeting;
    use crate::workload::Operation;

    #[test]
    fn matrix_expands_in_order() {
        let text = "name = \"m\"\n[load]\ntotal = 10\n[op.put]\nval-size = 8\n\n[matrix]\n\"load.clients\" = [1, 10]\nop.put.val-size = [256, \"1MB\"]\ntarget = [\"leader\"]\n";
        let s = Scenario::from_toml_str(text).unwrap();
        let runs = s.expand().unwrap();
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "m [clients=1, val-size=256, target=leader]",
                "m [clients=1, val-size=1MB, target=leader]",
                "m [clients=10, val-size=256, target=leader]",
                "m [clients=10, val-size=1MB, target=leader]",
            ]
        );
        assert_eq!(runs[3].load.clients, 10);
        assert!(matches!(&runs[3].op, Some(Operation::Put(p)) if p.val_size == 1_000_000));
        assert_eq!(runs[0].target, Targeting::Leader);
        assert!(runs.iter().all(|r| r.matrix.is_empty()));
    }

    #[test]
    fn matrix_values_are_validated() {
        let text = "[load]\ntotal = 10\n[op.put]\n[matrix]\n\"load.clients\" = [1, 0]\n";
        let err = Scenario::from_toml_str(text).unwrap_err();
        assert_eq!(err.field(), Some("matrix.load.clients"));
        assert!(err.to_string().contains("[clients=0]: load.clients: must be 1"), "{err}");
        let bad = "[load]\ntotal = 10\n[op.put]\n[matrix]\ntarget = [\"nowhere\"]\n";
        assert!(Scenario::from_toml_str(bad).unwrap_err().to_string().contains("unknown target"));
    }

    #[test]
    fn cases_replace_parts_of_the_scenario() {
        let text = r#"
name = "guide"
[load]
total = 10
[matrix]
target = ["leader", "all"]
[[matrix.case]]
label = "write"
load = { conns = 1, clients = 1, total = 100 }
op = { put = { val-size = 256 } }
[[matrix.case]]
label = "read"
load = { conns = 2, clients = 20, total = 200 }
op = { range = { key = "foo", consistency = "s" } }
"#;
        let runs = Scenario::from_toml_str(text).unwrap().expand().unwrap();
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "guide [target=leader, write]",
                "guide [target=leader, read]",
                "guide [target=all, write]",
                "guide [target=all, read]"
            ]
        );
        assert_eq!(runs[1].load.clients, 20);
        assert!(matches!(runs[1].op, Some(Operation::Range(_))));
        assert!(matches!(runs[2].op, Some(Operation::Put(_))));
    }
}
