#!/usr/bin/env bash
# The fault space at scale: N faults (default 500) drawn from a seed (default: the
# time), each diagnosed on two PoCL devices and every claim held against the fault's
# truth; prints, per fault family and topic, the claims that settled on the truth,
# that left it open among others, and that contradicted it, and the median time of a
# diagnose. The same code as the test (crates/cli/tests/it/fault_space.rs), built in
# release mode.
#
#   bench/rigor/fault-space.sh [N] [SEED]
set -euo pipefail
cd "$(dirname "$0")/../.."
export CLMULTI_FAULTS="${1:-500}"
[ -n "${2:-}" ] && export CLMULTI_FAULT_SEED="$2"
exec cargo test --release -p clmulti --test it fault_space:: -- --nocapture
