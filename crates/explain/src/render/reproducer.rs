//! A run as a stand-alone C program a runtime's maintainer can build with the ICD
//! loader alone: the same platform (by name), devices (by their place in it), context
//! mode, flags, buffer size and strategy, under the same soft limits, with as many
//! descriptors held as clmulti held itself (and none inherited, as a run's child
//! inherits none), so that it fails where clmulti's run did.
//! It prints the index and error of the first failure.

use crate::report::Report;
use clmulti_scenario::{ContextMode, Rlimit, Strategy};
use std::fmt::Write as _;

/// Quotes text as a C string literal.
fn c_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_ascii_graphic() || c == ' ' => out.push(c),
            c => {
                for b in c.to_string().bytes() {
                    let _ = write!(out, "\\{b:03o}");
                }
            }
        }
    }
    out.push('"');
    out
}

/// A shell word, quoted when it must be.
fn shell_word(text: &str) -> String {
    if !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-:=,+@%".contains(c))
    {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The run's soft limits as the program's `LIMITS[]` (the hard ones, as inherited).
fn limits(s: &clmulti_scenario::Scenario) -> String {
    let limits: Vec<String> = Rlimit::ALL
        .iter()
        .filter_map(|l| {
            s.limits
                .soft
                .get(l)
                .map(|v| format!("{{{}, {v}u}}", l.name()))
        })
        .collect();
    format!(
        "static const struct {{ int resource; rlim_t soft; }} LIMITS[] = {{{}}}; /* [limits] */\n#define NLIMITS {}\n",
        // C has no empty initializer: a placeholder, never read.
        if limits.is_empty() {
            "{-1, 0u}".to_owned()
        } else {
            limits.join(", ")
        },
        limits.len()
    )
}

/// The C program for `report`'s run, or why there is none (sub-devices, a strategy
/// with no one-call equivalent).
pub fn c_program(report: &Report) -> Result<String, String> {
    let s = &report.scenario;
    let alloc = &s.allocation;
    let strategy = reproducible_strategy(report)?;
    let (failed_at, what) = stop_words(report);
    let count = failed_at.map_or(report.buffers.max(1), |i| i + i / 5 + 10);
    let indices: Vec<String> = report.devices.iter().map(|d| d.index.to_string()).collect();
    let extra_fds = report.clmulti_fds.unwrap_or(0);
    let env = kept_env(report);
    let mut c = String::new();
    let _ = writeln!(
        c,
        "/* Reproduces clmulti run {}: {} buffers of {} B, {} context over {} device(s) of",
        s.name.replace("*/", "* /"),
        count,
        alloc.size_bytes,
        if s.context_mode == ContextMode::Shared {
            "one shared"
        } else {
            "one per-device"
        },
        indices.len()
    );
    let _ = writeln!(
        c,
        " * {}, strategy {}. clmulti's run {}.",
        report.platform.replace("*/", "* /"),
        strategy.name(),
        what.replace("*/", "* /")
    );
    let _ = writeln!(c, " * Build: gcc -O2 -o reproduce reproduce.c -lOpenCL");
    let _ = writeln!(
        c,
        " * Run:   {}./reproduce */",
        env.iter()
            .map(|e| format!("{e} "))
            .collect::<String>()
            .replace("*/", "* /")
    );
    c.push_str("#define CL_TARGET_OPENCL_VERSION 300\n#include <CL/cl.h>\n#include <fcntl.h>\n#include <stdio.h>\n#include <string.h>\n#include <sys/resource.h>\n#include <unistd.h>\n\n");
    let _ = writeln!(
        c,
        "static const char *PLATFORM = {};",
        c_string(&report.platform)
    );
    let _ = writeln!(
        c,
        "static const cl_uint DEVICES[] = {{{}}}; /* places among the platform's devices */",
        indices.join(", ")
    );
    let _ = writeln!(c, "#define NDEV {}\n#define SHARED {}\n#define SIZE {}u\n#define COUNT {count}\n#define FLAGS {:#x}u\n#define STRATEGY {}",
        indices.len(), u8::from(s.context_mode == ContextMode::Shared), alloc.size_bytes, alloc.flag_bits(),
        match strategy { Strategy::Fill => 1, Strategy::Migrate => 2, Strategy::Pin => 3, _ => 0 });
    c.push_str(&limits(s));
    let _ = writeln!(
        c,
        "#define EXTRA_FDS {extra_fds} /* descriptors clmulti held itself: held here too */\n"
    );
    c.push_str(BODY);
    Ok(c)
}

/// The run's strategy, or why the run is not written as a reproducer.
fn reproducible_strategy(report: &Report) -> Result<Strategy, String> {
    let s = &report.scenario;
    if s.devices.partition.is_some() {
        return Err(
            "a run on sub-devices (devices.partition) is not written as a reproducer".into(),
        );
    }
    if report.devices.is_empty() {
        return Err("the run chose no device".into());
    }
    match s.allocation.strategy {
        Strategy::Create | Strategy::Fill | Strategy::Migrate | Strategy::Pin => {
            Ok(s.allocation.strategy)
        }
        Strategy::Pool => Err("strategy \"pool\" is not written as a reproducer".into()),
    }
}

/// The buffer the run failed at, if it failed, and how it ended in words.
fn stop_words(report: &Report) -> (Option<u64>, String) {
    match &report.stop {
        crate::StopReason::Failed { index, error, call } => (
            Some(*index),
            format!("failed at buffer {index} with {error} in {}", call.c_name()),
        ),
        other => (
            None,
            format!("{} after {} buffers", other.summary(), report.buffers),
        ),
    }
}

/// The run's environment as `KEY=value` shell words, clmulti's own keys left out.
fn kept_env(report: &Report) -> Vec<String> {
    report
        .environment
        .as_ref()
        .map(|e| {
            e.kept
                .iter()
                .filter(|(k, _)| {
                    !k.starts_with("CLMULTI_PROGRESS") && k.as_str() != "CLMULTI_TRACE"
                })
                .map(|(k, v)| format!("{k}={}", shell_word(v)))
                .collect()
        })
        .unwrap_or_default()
}

const BODY: &str = r#"static const char *name(cl_int e) {
  switch (e) {
  case -4: return "CL_MEM_OBJECT_ALLOCATION_FAILURE"; case -5: return "CL_OUT_OF_RESOURCES";
  case -6: return "CL_OUT_OF_HOST_MEMORY"; case -30: return "CL_INVALID_VALUE";
  case -61: return "CL_INVALID_BUFFER_SIZE"; case -64: return "CL_INVALID_PROPERTY";
  default: return "an OpenCL error";
  }
}

static int fail(int i, cl_int e, const char *call) {
  printf("failed at buffer %d: %s (%d) in %s\n", i, name(e), e, call);
  return 1;
}

int main(void) {
  for (int i = 0; i < NLIMITS; i++) {
    struct rlimit l; getrlimit(LIMITS[i].resource, &l); l.rlim_cur = LIMITS[i].soft;
    if (setrlimit(LIMITS[i].resource, &l) != 0) { perror("setrlimit"); return 2; }
  }
  /* As clmulti's run: only the standard streams inherited, then its own descriptors. */
  for (int fd = 3; fd < 4096; fd++) close(fd);
  for (int i = 0; i < EXTRA_FDS; i++) open("/dev/null", O_RDONLY);
  cl_platform_id ps[16], p = NULL; cl_uint np = 0; char text[256];
  clGetPlatformIDs(16, ps, &np);
  for (cl_uint i = 0; i < np && !p; i++) {
    clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof text, text, NULL);
    if (strcmp(text, PLATFORM) == 0) p = ps[i];
  }
  if (!p) { printf("no platform named %s\n", PLATFORM); return 2; }
  cl_device_id all[64], d[NDEV]; cl_uint nd = 0; cl_int e;
  clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 64, all, &nd);
  for (int i = 0; i < NDEV; i++) {
    if (DEVICES[i] >= nd) { printf("the platform has %u device(s)\n", nd); return 2; }
    d[i] = all[DEVICES[i]];
  }
  cl_context ctx[NDEV]; cl_command_queue q[NDEV];
  for (int i = 0; i < NDEV; i++) {
    ctx[i] = SHARED && i > 0 ? ctx[0] : clCreateContext(NULL, SHARED ? NDEV : 1, SHARED ? d : &d[i], NULL, NULL, &e);
    if (e != CL_SUCCESS) return fail(0, e, "clCreateContext");
    q[i] = clCreateCommandQueueWithProperties(ctx[i], d[i], NULL, &e);
    if (e != CL_SUCCESS) return fail(0, e, "clCreateCommandQueueWithProperties");
  }
  cl_mem_properties pin = 0x4219; /* CL_MEM_DEVICE_ID_INTEL; NEO 22 knows it as 0x10011 */
  for (int i = 0; i < COUNT; i++) {
    int k = i % NDEV; cl_mem m;
    if (STRATEGY == 3) {
      cl_mem_properties props[] = {pin, (cl_mem_properties)d[k], 0};
      m = clCreateBufferWithProperties(ctx[k], props, FLAGS, SIZE, NULL, &e);
      if (e == CL_INVALID_PROPERTY && i == 0 && pin == 0x4219) { pin = 0x10011; i--; continue; }
      if (e != CL_SUCCESS) return fail(i, e, "clCreateBufferWithProperties");
    } else {
      m = clCreateBuffer(ctx[k], FLAGS, SIZE, NULL, &e);
      if (e != CL_SUCCESS) return fail(i, e, "clCreateBuffer");
    }
    if (STRATEGY == 1) {
      cl_uchar zero = 0;
      e = clEnqueueFillBuffer(q[k], m, &zero, 1, 0, SIZE, 0, NULL, NULL);
      if (e == CL_SUCCESS) e = clFinish(q[k]);
      if (e != CL_SUCCESS) return fail(i, e, "clEnqueueFillBuffer");
    } else if (STRATEGY == 2) {
      e = clEnqueueMigrateMemObjects(q[k], 1, &m, 0, 0, NULL, NULL);
      if (e == CL_SUCCESS) e = clFinish(q[k]);
      if (e != CL_SUCCESS) return fail(i, e, "clEnqueueMigrateMemObjects");
    }
  }
  printf("all %d buffers made\n", COUNT);
  return 0;
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_run_becomes_a_short_c_program_with_its_setting() {
        let mut report = crate::testing::failed_at_limit(1014, 1024, 10);
        report.clmulti_fds = Some(8);
        report.scenario.limits.soft.insert(Rlimit::NoFile, 1024);
        let c = c_program(&report).unwrap();
        assert!(c.lines().count() < 100, "{} lines", c.lines().count());
        report
            .scenario
            .limits
            .soft
            .insert(Rlimit::AddressSpace, 512 << 20);
        let c = c_program(&report).unwrap();
        assert!(
            c.contains("LIMITS[] = {{RLIMIT_NOFILE, 1024u}, {RLIMIT_AS, 536870912u}};"),
            "{c}"
        );
        assert!(c.contains("#define EXTRA_FDS 8"));
        assert!(c.contains("#define COUNT 1226"), "{c}");
        assert!(
            c.contains("failed at buffer 1014 with CL_OUT_OF_HOST_MEMORY (-6) in clCreateBuffer")
        );
        assert_eq!(c_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(shell_word("cpu cpu"), "'cpu cpu'");
    }
}
