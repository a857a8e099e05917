//! Why a scenario could not be read or is not valid, and where in its TOML text.

use crate::workload::InvalidParam;

/// Why a scenario could not be read or is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The text is not TOML, or does not have the shape of a scenario (unknown key, wrong type).
    #[error("{}{message}", Location(*.location))]
    Parse {
        /// What is wrong, as the parser says it.
        message: String,
        /// 1-based line and column, when known.
        location: Option<(usize, usize)>,
    },
    /// A field has a value that cannot be run.
    #[error("{}{field}: {message}", Location(*.location))]
    Invalid {
        /// Dotted path of the field, as written in TOML (`load.clients`).
        field: String,
        /// What is wrong with it.
        message: String,
        /// 1-based line and column of the value in the file, when read from one.
        location: Option<(usize, usize)>,
    },
}

struct Location(Option<(usize, usize)>);

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some((line, col)) => write!(f, "line {line}, column {col}: "),
            None => Ok(()),
        }
    }
}

impl From<InvalidParam> for ScenarioError {
    fn from(e: InvalidParam) -> Self {
        Self::Invalid { field: e.field, message: e.message, location: None }
    }
}

impl ScenarioError {
    pub(crate) fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::Invalid { field: field.to_owned(), message: message.into(), location: None }
    }

    /// The field this error is about, for validation errors.
    #[must_use]
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Invalid { field, .. } => Some(field),
            Self::Parse { .. } => None,
        }
    }
}

pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(before.len(), |nl| before.len() - nl - 1) + 1;
    (line, col)
}

/// The byte offset of a dotted field's value in the TOML text, found by walking the
/// spanned document: where the deepest part of the path that is written in the file starts
/// (a missing `faults.0.member` points at its step); `None` when none of it is (a default).
pub(super) fn field_offset(text: &str, field: &str) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let doc = DeTable::parse(text).ok()?;
    let mut value: Option<&DeValue<'_>> = None;
    let mut table = doc.get_ref();
    let mut best = None;
    let mut parts = field.split('.').peekable();
    while let Some(part) = parts.next() {
        // An array of tables (`[[mix]]`) is indexed by the next part.
        let found = match (value, part.parse::<usize>()) {
            (Some(DeValue::Array(items)), Ok(i)) => items.get(i).map(|v| (v.span().start, v)),
            _ => table.iter().find(|(k, _)| k.get_ref().as_ref() == part).map(|(k, v)| {
                (if parts.peek().is_none() { v.span().start } else { k.span().start }, v)
            }),
        };
        let Some((offset, v)) = found else { break };
        best = Some(offset);
        value = Some(v.get_ref());
        if let DeValue::Table(t) = v.get_ref() {
            table = t;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;

    #[test]
    fn unknown_key_names_line_and_key() {
        let err = Scenario::from_toml_str("[load]\nclients = 1\nconn = 3\n[op.put]\n").unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("line 3, column 1: "), "{msg}");
        assert!(msg.contains("unknown field `conn`"), "{msg}");
    }

    #[test]
    fn invalid_value_names_field_and_line() {
        let err =
            Scenario::from_toml_str("[load]\nclients = 0\ntotal = 5\n[op.put]\n").unwrap_err();
        assert_eq!(err.field(), Some("load.clients"));
        assert!(err.to_string().starts_with("line 2, column 11: load.clients: must be 1"), "{err}");
    }
}
