//! Hand-rolled argument parsing: xtask stays lean.

use std::path::PathBuf;

/// How an xtask command failed.
#[derive(Debug)]
pub enum Error {
    /// Wrong arguments: exit 2.
    Usage(String),
    /// The work failed: exit 1.
    Failed(String),
}

/// `cargo xtask sweep` arguments.
#[derive(Debug, Default)]
pub struct SweepArgs {
    pub paths: Vec<PathBuf>,
    pub out: PathBuf,
    pub resume: bool,
    pub timeout: Option<f64>,
    pub shard: Option<(usize, usize)>,
    pub compare: Option<PathBuf>,
    pub threshold: f64,
    pub bin: Option<PathBuf>,
    pub features: Option<String>,
}

fn value<'a>(flag: &str, it: &mut impl Iterator<Item = &'a String>) -> Result<&'a String, Error> {
    it.next()
        .ok_or_else(|| Error::Usage(format!("{flag} needs a value")))
}

impl SweepArgs {
    pub fn parse(argv: &[String]) -> Result<Self, Error> {
        let mut a = SweepArgs {
            out: PathBuf::from("sweep-results"),
            threshold: 0.10,
            ..SweepArgs::default()
        };
        let mut it = argv.iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--out" => a.out = value(arg, &mut it)?.into(),
                "--resume" => a.resume = true,
                "--timeout" => {
                    let v = value(arg, &mut it)?;
                    a.timeout =
                        Some(v.parse().ok().filter(|t: &f64| *t > 0.0).ok_or_else(|| {
                            Error::Usage(format!("--timeout {v}: expected seconds > 0"))
                        })?);
                }
                "--shard" => {
                    let v = value(arg, &mut it)?;
                    a.shard = Some(parse_shard(v)?);
                }
                "--compare" => a.compare = Some(value(arg, &mut it)?.into()),
                "--threshold" => {
                    let v = value(arg, &mut it)?;
                    a.threshold = v.parse().ok().filter(|t: &f64| *t >= 0.0).ok_or_else(|| {
                        Error::Usage(format!("--threshold {v}: expected a fraction >= 0"))
                    })?;
                }
                "--bin" => a.bin = Some(value(arg, &mut it)?.into()),
                "--features" => a.features = Some(value(arg, &mut it)?.clone()),
                flag if flag.starts_with("--") => {
                    return Err(Error::Usage(format!("unknown option {flag}")))
                }
                path => a.paths.push(path.into()),
            }
        }
        if a.paths.is_empty() {
            a.paths.push("configs".into());
        }
        Ok(a)
    }
}

fn parse_shard(v: &str) -> Result<(usize, usize), Error> {
    let bad = || Error::Usage(format!("--shard {v}: expected K/N with 1 <= K <= N"));
    let (k, n) = v.split_once('/').ok_or_else(bad)?;
    let (k, n): (usize, usize) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// `cargo xtask merge` arguments.
#[derive(Debug)]
pub struct MergeArgs {
    pub inputs: Vec<PathBuf>,
    pub out: PathBuf,
}

impl MergeArgs {
    pub fn parse(argv: &[String]) -> Result<Self, Error> {
        let mut inputs = Vec::new();
        let mut out = PathBuf::from("sweep-results");
        let mut it = argv.iter();
        while let Some(arg) = it.next() {
            match arg.as_str() {
                "--out" => out = value(arg, &mut it)?.into(),
                flag if flag.starts_with("--") => {
                    return Err(Error::Usage(format!("unknown option {flag}")))
                }
                path => inputs.push(path.into()),
            }
        }
        if inputs.is_empty() {
            return Err(Error::Usage(
                "merge needs the shards' result folders or files".into(),
            ));
        }
        Ok(MergeArgs { inputs, out })
    }
}
