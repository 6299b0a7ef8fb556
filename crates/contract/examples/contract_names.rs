//! What clmulti's processes agree on, printed: the libraries a run may load with the
//! variables each answers to, and the progress envelope's lines.
//!
//! `cargo run -p clmulti-contract --example contract_names`

use clmulti_contract::{kmd_emu, layer, progress, trace, PROJECT_LIBRARIES};

fn main() {
    for library in PROJECT_LIBRARIES {
        println!(
            "{} ({}): {} in {}",
            library.token, library.package, library.file_name, library.env_key
        );
    }
    println!("layer knobs: {}", layer::KNOBS.join(" "));
    println!("kmd-emu knobs: {}", kmd_emu::KNOBS.join(" "));
    println!(
        "tracer: {}={} preloads {} beside it; {} names its report file",
        trace::MODE,
        trace::FULL,
        trace::ALLOC_FILE_NAME,
        trace::REPORT
    );
    println!(
        "progress ({}): {}, {}, {}",
        progress::PROGRESS_ENV,
        progress::LOADING.trim_end(),
        progress::LOADED.trim_end(),
        progress::Kind::Sample.line("{...}").trim_end()
    );
}
