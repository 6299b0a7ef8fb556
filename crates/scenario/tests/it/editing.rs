//! Editing mistakes that cost a run: `check` says each one, as an error or a warning,
//! at its file, line, column and key.

#[path = "../cases/editing.rs"]
mod cases;

use cases::{Says, MISTAKES};
use clmulti_scenario::{ScenarioError, ScenarioFile};

/// What check says of `text`: its problems, or (a valid file) its warnings.
fn said(text: &str) -> (Vec<ScenarioError>, Vec<ScenarioError>) {
    let problems = ScenarioFile::problems_in_text(text, "case.toml");
    let warnings = if problems.is_empty() {
        ScenarioFile::parse(text, "case.toml")
            .map(|f| f.warnings())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    (problems, warnings)
}

#[test]
fn every_editing_mistake_is_said_at_its_line_column_and_key() {
    assert!(MISTAKES.len() >= 60, "{} mistakes", MISTAKES.len());
    let wrong: Vec<String> = MISTAKES.iter().filter_map(|m| wrong(m).err()).collect();
    assert!(
        wrong.is_empty(),
        "{} of {}:\n{}",
        wrong.len(),
        MISTAKES.len(),
        wrong.join("\n")
    );
}

/// Whether check says `m` as the corpus says it does, or what it says instead.
fn wrong(m: &cases::Mistake) -> Result<(), String> {
    let (problems, warnings) = said(m.text);
    let found = match m.says {
        Says::Error => &problems,
        Says::Warning if !problems.is_empty() => {
            return Err(format!("{}: errors {problems:?}", m.what))
        }
        Says::Warning => &warnings,
    };
    let message = found
        .iter()
        .find(|e| e.line == Some(m.line) && e.key.as_deref() == Some(m.key))
        .ok_or_else(|| {
            format!(
                "{}: nothing at line {} key {}: {found:?}",
                m.what, m.line, m.key
            )
        })?;
    let column = message.column.unwrap_or(0);
    let head = format!("case.toml:{}:{column}: key `{}`: ", m.line, m.key);
    if column >= 1 && message.message.contains(m.fragment) && message.to_string().starts_with(&head)
    {
        Ok(())
    } else {
        Err(format!("{}: {message}", m.what))
    }
}

#[test]
fn a_valid_file_has_no_warning() {
    for text in [
        "[env]\nPOCL_DEVICES = \"pthread pthread\"\nMY_OWN = \"1\"\n",
        "[devices]\ntype = \"GPU\"\n[allocation]\nflags = [\"read_write\"]\nstrategy = \"FILL\"\n",
    ] {
        assert_eq!(said(text), (Vec::new(), Vec::new()), "{text}");
    }
}

#[test]
fn a_layer_that_is_not_there_is_one_problem_not_two() {
    // The library beside no binary: its path is the problem, not the policy with it.
    let (problems, _) = said(
        "[env]\nOPENCL_LAYERS = \"/nowhere/libclmulti_layer.so\"\nCLMULTI_LAYER_POLICY = \"eager\"\n",
    );
    let keys: Vec<_> = problems
        .iter()
        .map(|e| e.key.clone().unwrap_or_default())
        .collect();
    assert_eq!(keys, ["env.OPENCL_LAYERS"], "{problems:?}");
}
