//! Matrix expansion (`[matrix]`): one run per combination of the axes' values, each run
//! `repeat` times, the combinations in rotation (or each one's repeats in a row).

use serde::{Deserialize, Serialize};

use super::{Scenario, ScenarioError};

impl Scenario {
    /// Every run of the scenario: one per combination of its `[matrix]` axes, in order (the
    /// first axis varies slowest), each validated and named after the values it takes
    /// (`put [clients=1000, val-size=256]`); with `repeat = N`, each combination N times,
    /// numbered (`put [clients=1000, val-size=256] #2`), in rotation (every combination's #1,
    /// then every #2, ...) so that a machine's drift over the runs is spread over every
    /// combination, or each combination's repeats in a row with `order = "in-a-row"`. Each
    /// run carries its [`MatrixCell`]. The scenario itself when it has no matrix.
    ///
    /// # Errors
    /// [`ScenarioError::Invalid`] naming the matrix axis when a combination cannot be run.
    pub fn expand(&self) -> Result<Vec<Scenario>, ScenarioError> {
        if self.matrix.is_empty() {
            return Ok(vec![self.clone()]);
        }
        let repeat = repeat_of(&self.matrix)?;
        let in_a_row = in_a_row(&self.matrix)?;
        let mut axes = Vec::new();
        flatten_axes(&self.matrix, String::new(), &mut axes)?;
        let mut base = self.clone();
        base.matrix.clear();
        let base_value = toml::Value::try_from(&base)
            .map_err(|e| ScenarioError::invalid("matrix", format!("cannot apply: {e}")))?;
        let combinations: usize = axes.iter().map(|(_, values)| values.len()).product();
        let total = combinations.saturating_mul(repeat as usize);
        if total > 10_000 {
            let runs = if repeat > 1 { format!(" ({total} runs)") } else { String::new() };
            return Err(ScenarioError::invalid(
                "matrix",
                format!("{combinations} combinations{runs} is too many"),
            ));
        }
        let mut cells = Vec::with_capacity(combinations);
        for n in 0..combinations {
            let mut value = base_value.clone();
            let mut labels = Vec::with_capacity(axes.len());
            let mut cell = toml::Table::new();
            let mut rest = n;
            let mut picks = vec![0; axes.len()];
            for (i, (_, values)) in axes.iter().enumerate().rev() {
                picks[i] = rest % values.len();
                rest /= values.len();
            }
            for ((path, values), pick) in axes.iter().zip(&picks) {
                let chosen = &values[*pick];
                if path == CASE_AXIS {
                    let case = apply_case(&mut value, chosen, *pick)?;
                    cell.insert(path.clone(), toml::Value::String(case.clone()));
                    labels.push(case);
                } else {
                    cell.insert(path.clone(), chosen.clone());
                    set_path(&mut value, path, chosen.clone());
                    labels.push(format!(
                        "{}={}",
                        path.rsplit('.').next().unwrap_or(path),
                        label(chosen)
                    ));
                }
            }
            let field =
                axes.first().map_or_else(|| "matrix".to_owned(), |(p, _)| format!("matrix.{p}"));
            let mut run: Scenario = value.try_into().map_err(|e: toml::de::Error| {
                ScenarioError::invalid(
                    &field,
                    format!("[{}]: {}", labels.join(", "), e.message().trim()),
                )
            })?;
            if run.kubernetes.is_some() {
                // The base's mix is its own node count's: the cell's may differ.
                run.mix.clear();
                run.load.rate = 0;
                run.derive_kubernetes().map_err(|e| match e {
                    ScenarioError::Invalid { message, .. } => ScenarioError::invalid(
                        &field,
                        format!("[{}]: {message}", labels.join(", ")),
                    ),
                    e => e,
                })?;
            }
            run.name = if labels.is_empty() {
                base.name.clone()
            } else {
                format!("{} [{}]", base.name, labels.join(", "))
            };
            run.validate().map_err(|e| match e {
                // Only `repeat`: the scenario's own fields are at fault, named as they are.
                e @ ScenarioError::Invalid { .. } if axes.is_empty() => e,
                ScenarioError::Invalid { field: f, message, .. } => ScenarioError::invalid(
                    &field,
                    format!("[{}]: {f}: {message}", labels.join(", ")),
                ),
                other => other,
            })?;
            cells.push((run, cell));
        }
        let mut order: Vec<(usize, u32)> = Vec::with_capacity(total);
        if in_a_row {
            order.extend((0..combinations).flat_map(|c| (1..=repeat).map(move |r| (c, r))));
        } else {
            order.extend((1..=repeat).flat_map(|r| (0..combinations).map(move |c| (c, r))));
        }
        let runs = order
            .into_iter()
            .map(|(c, repetition)| {
                let (run, cell) = &cells[c];
                let mut run = run.clone();
                if repeat > 1 {
                    run.name = format!("{} #{repetition}", run.name);
                }
                run.matrix_cell = Some(MatrixCell { axes: cell.clone(), repetition, repeat });
                run
            })
            .collect();
        Ok(runs)
    }
}

/// Where a run stands in the matrix it was expanded from: the value each axis took, and
/// which of the combination's repetitions it is. [`Scenario::expand`] sets it on every run
/// (as [`Scenario::matrix_cell`]); the run's report records it (`matrix`), so that the runs
/// of one combination can be told apart from those of another without parsing names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatrixCell {
    /// The value each axis took, by the axis's dotted path (`load.clients`), in the matrix's
    /// order (the first varies slowest); the [`CASE_AXIS`] by its case's label.
    pub axes: toml::Table,
    /// Which run of this combination it is, from 1.
    pub repetition: u32,
    /// How many times the matrix runs each combination (`[matrix] repeat`, 1 when not set).
    pub repeat: u32,
}

impl MatrixCell {
    /// The value `axis` took as the run's name shows it (`256`, `1MB`, a case's label).
    #[must_use]
    pub fn label(&self, axis: &str) -> Option<String> {
        self.axes.get(axis).map(label)
    }
}

/// The `[matrix]` key that says how many times each combination runs (`repeat = 3`): the
/// one key of the table that is not an axis.
pub const REPEAT_KEY: &str = "repeat";

/// The `[matrix]` key that says in which order the repeats run: `"interleaved"` (the
/// default: A B C A B C ...) or `"in-a-row"` (A A B B C C); not an axis.
pub const ORDER_KEY: &str = "order";

/// The most times a matrix may run each combination.
pub const MAX_REPEAT: u32 = 100;

/// `[matrix] repeat`, checked: 1 when not set.
fn repeat_of(matrix: &toml::Table) -> Result<u32, ScenarioError> {
    match matrix.get(REPEAT_KEY) {
        None => Ok(1),
        Some(toml::Value::Integer(n)) if (1..=i64::from(MAX_REPEAT)).contains(n) => Ok(*n as u32),
        Some(_) => Err(ScenarioError::invalid(
            "matrix.repeat",
            format!(
                "runs each combination this many times: a whole number from 1 to {MAX_REPEAT}, like repeat = 3"
            ),
        )),
    }
}

/// `[matrix] order`, checked: whether each combination's repeats run in a row.
fn in_a_row(matrix: &toml::Table) -> Result<bool, ScenarioError> {
    match matrix.get(ORDER_KEY).map(toml::Value::as_str) {
        None | Some(Some("interleaved")) => Ok(false),
        Some(Some("in-a-row")) => Ok(true),
        Some(_) => Err(ScenarioError::invalid(
            "matrix.order",
            "the order of the repeats: \"interleaved\" (A B A B, the default) or \"in-a-row\" (A A B B)",
        )),
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
/// `"load.clients" = [..]` and `load.clients = [..]` name the same axis). The top level's
/// [`REPEAT_KEY`] and [`ORDER_KEY`] are not axes.
fn flatten_axes(
    table: &toml::Table,
    prefix: String,
    out: &mut Vec<(String, Vec<toml::Value>)>,
) -> Result<(), ScenarioError> {
    for (key, value) in table {
        if prefix.is_empty() && (key == REPEAT_KEY || key == ORDER_KEY) {
            continue;
        }
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

    #[test]
    fn repeat_runs_each_combination_in_a_row_and_every_run_knows_its_cell() {
        let text = "name = \"m\"\n[load]\ntotal = 10\n[op.put]\n[matrix]\nrepeat = 2\norder = \"in-a-row\"\n\"load.clients\" = [1, 10]\nop.put.val-size = [256, \"1KiB\"]\n";
        let runs = Scenario::from_toml_str(text).unwrap().expand().unwrap();
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "m [clients=1, val-size=256] #1",
                "m [clients=1, val-size=256] #2",
                "m [clients=1, val-size=1KiB] #1",
                "m [clients=1, val-size=1KiB] #2",
                "m [clients=10, val-size=256] #1",
                "m [clients=10, val-size=256] #2",
                "m [clients=10, val-size=1KiB] #1",
                "m [clients=10, val-size=1KiB] #2",
            ]
        );
        let cell = runs[5].matrix_cell.as_ref().unwrap();
        let axes: Vec<(&str, String)> =
            cell.axes.iter().map(|(k, v)| (k.as_str(), v.to_string())).collect();
        assert_eq!(
            axes,
            [("load.clients", "10".to_owned()), ("op.put.val-size", "256".to_owned())]
        );
        assert_eq!((cell.repetition, cell.repeat), (2, 2));
        assert_eq!(runs[5].load.clients, 10);
        // The cell is the run's own: not in its TOML (nor so in a report's scenario).
        assert!(!toml::to_string(&runs[5]).unwrap().contains("repetition"));
        assert!(Scenario::from_toml_str(text).unwrap().matrix_cell.is_none());

        // Cases are recorded by label; without repeat, each combination runs once.
        let cases = "[load]\ntotal = 10\n[[matrix.case]]\nlabel = \"w\"\nop = { put = {} }\n";
        let runs = Scenario::from_toml_str(cases).unwrap().expand().unwrap();
        let cell = runs[0].matrix_cell.as_ref().unwrap();
        assert_eq!(runs[0].name, "mix [w]");
        assert_eq!(cell.axes.get(CASE_AXIS).and_then(toml::Value::as_str), Some("w"));
        assert_eq!((cell.repetition, cell.repeat), (1, 1));
    }

    #[test]
    fn repeats_run_in_rotation_by_default() {
        let text = "name = \"m\"\n[load]\ntotal = 10\n[op.put]\n[matrix]\nrepeat = 3\n\"load.clients\" = [1, 10]\n";
        let runs = Scenario::from_toml_str(text).unwrap().expand().unwrap();
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "m [clients=1] #1",
                "m [clients=10] #1",
                "m [clients=1] #2",
                "m [clients=10] #2",
                "m [clients=1] #3",
                "m [clients=10] #3",
            ]
        );
        let clients: Vec<u32> = runs.iter().map(|r| r.load.clients).collect();
        assert_eq!(clients, [1, 10, 1, 10, 1, 10]);
        let repetitions: Vec<u32> =
            runs.iter().map(|r| r.matrix_cell.as_ref().unwrap().repetition).collect();
        assert_eq!(repetitions, [1, 1, 2, 2, 3, 3]);
        // Said explicitly, the same; anything else is named.
        let explicit = text.replace("repeat = 3", "repeat = 3\norder = \"interleaved\"");
        assert_eq!(Scenario::from_toml_str(&explicit).unwrap().expand().unwrap(), runs);
        let bad = text.replace("repeat = 3", "repeat = 3\norder = \"random\"");
        let err = Scenario::from_toml_str(&bad).unwrap_err();
        assert_eq!(err.field(), Some("matrix.order"), "{err}");
        assert!(err.to_string().contains("in-a-row"), "{err}");
    }

    #[test]
    fn repeat_alone_runs_the_scenario_again_and_is_checked() {
        let again = "name = \"p\"\n[load]\ntotal = 10\n[op.put]\n[matrix]\nrepeat = 3\n";
        let runs = Scenario::from_toml_str(again).unwrap().expand().unwrap();
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["p #1", "p #2", "p #3"]);
        assert!(runs.iter().all(|r| r.matrix_cell.as_ref().is_some_and(|c| c.axes.is_empty())));

        for bad in ["0", "101", "2.5", "[1, 2]", "\"3\""] {
            let text = format!("[load]\ntotal = 10\n[op.put]\n[matrix]\nrepeat = {bad}\n");
            let err = Scenario::from_toml_str(&text).unwrap_err();
            assert_eq!(err.field(), Some("matrix.repeat"), "repeat = {bad}: {err}");
            assert!(err.to_string().contains("from 1 to 100"), "{err}");
        }
        // With nothing but repeat, the scenario's own field is named.
        let text = "[load]\ntotal = 10\nclients = 0\n[op.put]\n[matrix]\nrepeat = 2\n";
        assert_eq!(Scenario::from_toml_str(text).unwrap_err().field(), Some("load.clients"));
        let many = "[load]\ntotal = 10\n[op.put]\n[matrix]\nrepeat = 100\n\"load.clients\" = [\n";
        let many = format!("{many}{}]\n", vec!["1"; 101].join(", "));
        let err = Scenario::from_toml_str(&many).unwrap_err().to_string();
        assert!(err.contains("101 combinations (10100 runs) is too many"), "{err}");
    }
}
