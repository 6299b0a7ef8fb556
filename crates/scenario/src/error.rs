//! What goes wrong with a scenario: a problem at a key, before it has a place in the
//! file ([`Problem`]), and the error a caller sees, with file, line, column and key
//! ([`ScenarioError`]).

use std::fmt;

/// A scenario file that could not be turned into runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file, as given.
    pub file: String,
    /// 1-based line, when the problem has a place in the file.
    pub line: Option<usize>,
    /// 1-based column.
    pub column: Option<usize>,
    /// The key the problem belongs to, as the file writes it: `allocation.size`,
    /// `devices.indices[2]`, `grid."allocation.count"[1]` for a value the grid sets.
    pub key: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, ":{l}:{c}")?;
        }
        if let Some(k) = &self.key {
            write!(f, ": key `{k}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// A problem at a key path (`allocation.size`), before it is given a file location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Dotted key path.
    pub key: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

pub(crate) fn problem(key: &str, message: impl Into<String>) -> Problem {
    Problem {
        key: key.to_owned(),
        message: message.into(),
    }
}
