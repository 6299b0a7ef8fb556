//! Editing mistakes that cost a run: each with what `clmulti check` says (an error or
//! a warning, at a line and key, in words) and what the JSON Schema editors use does
//! with it. Shared by the scenario crate's tests (check's messages) and xtask's (the
//! schema agrees with check on every case it can decide). The mistakes only the
//! machine decides (devices beyond it, a size above its largest buffer, an address
//! space below its runtime's) are in the CLI's tests, which run `check` on PoCL.

/// How check reports a mistake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)] // Each test binary reads the fields it needs.
pub enum Says {
    /// An error: the file does not run.
    Error,
    /// A warning: the file runs, and check says what is likely wrong first.
    Warning,
}

/// What the schema does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)]
pub enum Schema {
    /// It refuses the file (check's errors).
    Refuses,
    /// It accepts the file (check's warnings: the file is valid).
    Accepts,
    /// JSON Schema cannot state the rule, and why (check alone says it).
    Cannot(&'static str),
}

/// An editing mistake.
#[derive(Debug)]
#[allow(dead_code)]
pub struct Mistake {
    pub what: &'static str,
    pub text: &'static str,
    pub line: usize,
    pub key: &'static str,
    pub fragment: &'static str,
    pub says: Says,
    pub schema: Schema,
}

const fn error(
    what: &'static str,
    text: &'static str,
    line: usize,
    key: &'static str,
    fragment: &'static str,
) -> Mistake {
    Mistake {
        what,
        text,
        line,
        key,
        fragment,
        says: Says::Error,
        schema: Schema::Refuses,
    }
}

const fn warning(
    what: &'static str,
    text: &'static str,
    line: usize,
    key: &'static str,
    fragment: &'static str,
) -> Mistake {
    Mistake {
        what,
        text,
        line,
        key,
        fragment,
        says: Says::Warning,
        schema: Schema::Accepts,
    }
}

const TWO_VALUES: Schema =
    Schema::Cannot("JSON Schema cannot compare one value with another (draft 7 has no $data)");

pub const MISTAKES: &[Mistake] = &[
    // Units: a letter alone runs as a decimal size where a binary one was meant.
    error("a bare M", "[allocation]\nsize = \"1M\"\n", 2, "allocation.size", "did you mean \"1MiB\" (1048576 bytes) or \"1MB\" (1000000 bytes)?"),
    error("a bare k", "[allocation]\nsize = \"64k\"\n", 2, "allocation.size", "did you mean \"64KiB\" (65536 bytes) or \"64KB\" (64000 bytes)?"),
    error("Gi without its B", "[guards]\nmax_total = \"2Gi\"\n", 2, "guards.max_total", "did you mean \"2GiB\""),
    error("a bare G in limits.as", "[limits]\nas = \"8G\"\n", 2, "limits.as", "did you mean \"8GiB\""),
    error("a bare G in max_rss", "[guards]\nmax_rss = \"4G\"\n", 2, "guards.max_rss", "did you mean \"4GiB\""),
    error("a bare M in a pool", "[allocation]\nstrategy = \"pool\"\npool_size = \"256M\"\n", 3, "allocation.pool_size", "did you mean \"256MiB\""),
    error("a bare M in a grid value", "[grid]\n\"allocation.size\" = [\"1MiB\", \"2M\"]\n", 2, "grid.\"allocation.size\"[1]", "did you mean \"2MiB\""),
    error("a unit spelled out", "[allocation]\nsize = \"1 MEG\"\n", 2, "allocation.size", "unknown unit \"MEG\""),
    // Typos in keys and tables.
    error("a key typo", "[allocation]\ncuont = 3\n", 2, "allocation.cuont", "did you mean `count`?"),
    error("a top-level typo", "nmae = \"x\"\n", 1, "nmae", "did you mean `name`?"),
    error("a table typo", "[allocaton]\nsize = \"1MiB\"\n", 1, "allocaton", "did you mean `allocation`?"),
    error("a table without its s", "[limit]\nnofile = 64\n", 1, "limit", "did you mean `limits`?"),
    error("a guard typo", "[guards]\nmax_rs = \"1GiB\"\n", 2, "guards.max_rs", "did you mean `max_rss`?"),
    error("a sampling typo", "[sampling]\neverey = 10\n", 2, "sampling.everey", "did you mean `every`?"),
    error("a devices typo", "[devices]\ncont = 2\n", 2, "devices.cont", "did you mean `count`?"),
    error("axpy.samples without its s", "[axpy]\ncheck = \"sample\"\nsample = 3\n", 3, "axpy.sample", "did you mean `samples`?"),
    error("context.mode with an s", "[context]\nmodes = \"shared\"\n", 2, "context.modes", "did you mean `mode`?"),
    error("a release typo", "[allocation]\nrelase_every = 10\n", 2, "allocation.relase_every", "did you mean `release_every`?"),
    error("two typos in one table", "[allocation]\nsize = \"1MiB\"\nsiez = 3\nstrategie = \"fill\"\n", 4, "allocation.strategie", "did you mean `strategy`?"),
    // Typos in words.
    error("a mode typo", "[context]\nmode = \"shraed\"\n", 2, "context.mode", "did you mean `shared`?"),
    error("a strategy typo", "[allocation]\nstrategy = \"fil\"\n", 2, "allocation.strategy", "did you mean `fill`?"),
    error("a plural type", "[devices]\ntype = \"gpus\"\n", 2, "devices.type", "did you mean `gpu`?"),
    error("a flag typo", "[allocation]\nflags = [\"READ_WRTIE\"]\n", 2, "allocation.flags[0]", "did you mean `READ_WRITE`?"),
    error("a check typo", "[axpy]\ncheck = \"sampel\"\n", 2, "axpy.check", "did you mean `sample`?"),
    error("an underscore for a dash", "[sampling]\nmaps = \"every_sample\"\n", 2, "sampling.maps", "did you mean `every-sample`?"),
    error("a fallback without its dash", "[devices]\nfallback = \"anytype\"\n", 2, "devices.fallback", "did you mean `any-type`?"),
    error("a grid key typo", "[grid]\n\"allocation.cuont\" = [1, 2]\n", 2, "grid.\"allocation.cuont\"", "did you mean `count`?"),
    error("a grid key's table typo", "[grid]\n\"alocation.size\" = [\"1MiB\"]\n", 2, "grid.\"alocation.size\"", "did you mean `allocation.size`?"),
    error("count's word with an underscore", "[allocation]\ncount = \"until_failure\"\n", 2, "allocation.count", "\"until-failure\""),
    // Bounds.
    error("nofile below the standard streams", "[limits]\nnofile = 2\n", 2, "limits.nofile", "at least 3"),
    error("nofile zero", "[limits]\nnofile = 0\n", 2, "limits.nofile", "positive integer"),
    error("an address space below 64 MiB", "[limits]\nas = \"32MiB\"\n", 2, "limits.as", "below 64MiB"),
    error("a data limit below 64 MiB", "[limits]\ndata = \"1MB\"\n", 2, "limits.data", "below 64MiB"),
    error("a pause over a second", "[allocation]\npause_us = 2000000\n", 2, "allocation.pause_us", "an integer from 0 to 1000000"),
    error("no time at all", "[guards]\nmax_seconds = 0\n", 2, "guards.max_seconds", "must be > 0"),
    error("no RAM at all", "[guards]\nmax_rss = \"0%\"\n", 2, "guards.max_rss", "(0, 100]"),
    error("a negative count", "[allocation]\ncount = -5\n", 2, "allocation.count", "positive integer"),
    // What does nothing.
    Mistake { schema: TWO_VALUES, ..error("release_every above the count", "[allocation]\ncount = 100\nrelease_every = 500\n", 3, "allocation.release_every", "none would come before the run's end") },
    Mistake { schema: TWO_VALUES, ..error("release_every at the count", "[allocation]\ncount = 100\nrelease_every = 100\n", 3, "allocation.release_every", "make it smaller than the count") },
    Mistake { schema: TWO_VALUES, ..error("release_every at the default count", "[allocation]\nrelease_every = 1000\n", 2, "allocation.release_every", "allocation.count = 1000") },
    error("a pool size without a pool", "[allocation]\npool_size = \"1GiB\"\n", 2, "allocation.pool_size", "only applies with allocation.strategy = \"pool\""),
    error("samples without sampling", "[axpy]\nsamples = 4\n", 2, "axpy.samples", "only applies with axpy.check = \"sample\""),
    error("a policy without its layer", "[env]\nCLMULTI_LAYER_POLICY = \"eager\"\n", 2, "env.CLMULTI_LAYER_POLICY", "OPENCL_LAYERS does not load the layer"),
    error("a knob without its policy", "[env]\nCLMULTI_LAYER_FAIL_AFTER = \"10\"\n", 2, "env.CLMULTI_LAYER_FAIL_AFTER", "only applies with CLMULTI_LAYER_POLICY set"),
    error("the layer without a policy", "[env]\nOPENCL_LAYERS = \"{clmulti-layer}\"\n", 2, "env.OPENCL_LAYERS", "but no CLMULTI_LAYER_POLICY"),
    // [env] names in another case: nothing reads them.
    error("ld_preload", "[env]\nld_preload = \"libfoo.so\"\n", 2, "env.ld_preload", "did you mean LD_PRELOAD?"),
    error("pocl_devices", "[env]\npocl_devices = \"pthread pthread\"\n", 2, "env.pocl_devices", "did you mean POCL_DEVICES?"),
    error("Opencl_Layers", "[env]\nOpencl_Layers = \"x.so\"\n", 2, "env.Opencl_Layers", "did you mean OPENCL_LAYERS?"),
    error("neoreaddebugkeys", "[env]\nneoreaddebugkeys = \"1\"\n", 2, "env.neoreaddebugkeys", "did you mean NEOReadDebugKeys?"),
    error("a lower-case layer policy", "[env]\nclmulti_layer_policy = \"eager\"\n", 2, "env.clmulti_layer_policy", "did you mean CLMULTI_LAYER_POLICY?"),
    warning("POCL_DEVICE", "[env]\nPOCL_DEVICE = \"pthread pthread\"\n", 2, "env.POCL_DEVICE", "did you mean POCL_DEVICES?"),
    warning("OPENCL_LAYER", "[env]\nOPENCL_LAYER = \"x.so\"\n", 2, "env.OPENCL_LAYER", "did you mean OPENCL_LAYERS?"),
    warning("CreateMultipleRootDevice", "[env]\nCreateMultipleRootDevice = \"2\"\n", 2, "env.CreateMultipleRootDevice", "did you mean CreateMultipleRootDevices?"),
    warning("sampling no more often than the count", "[allocation]\ncount = 100000\n[sampling]\nevery = 10000000\n", 4, "sampling.every", "is not below allocation.count (100000)"),
    error("a name with a space", "[env]\n\"MY VAR\" = \"1\"\n", 2, "env.MY VAR", "without '=', spaces or control characters"),
    error("a value with a tab", "[env]\nX = \"a\\tb\"\n", 2, "env.X", "control character U+0009"),
    error("a policy typo", "[env]\nOPENCL_LAYERS = \"{clmulti-layer}\"\nCLMULTI_LAYER_POLICY = \"fd-per-pear\"\n", 3, "env.CLMULTI_LAYER_POLICY", "unknown policy \"fd-per-pear\""),
    error("a mirror over all RAM", "[env]\nOPENCL_LAYERS = \"{clmulti-layer}\"\nCLMULTI_LAYER_POLICY = \"host-mirror\"\nCLMULTI_LAYER_MIRROR_LIMIT = \"150%\"\n", 4, "env.CLMULTI_LAYER_MIRROR_LIMIT", "(0, 100]"),
    // Contradictions, in any case.
    error("a placement beyond the devices", "[devices]\ncount = 2\n[allocation]\nplacement = 2\n", 4, "allocation.placement", "not among the 2 selected device(s)"),
    error("count and indices", "[devices]\ncount = 2\nindices = [0, 1]\n", 3, "devices.indices", "not both"),
    error("an index twice", "[devices]\nindices = [0, 0]\n", 2, "devices.indices[1]", "listed twice"),
    error("a flag twice in two cases", "[allocation]\nflags = [\"READ_WRITE\", \"read_write\"]\n", 2, "allocation.flags[1]", "listed twice"),
    error("a flag twice with and without CL_MEM_", "[allocation]\nflags = [\"CL_MEM_READ_ONLY\", \"READ_ONLY\"]\n", 2, "allocation.flags[1]", "listed twice"),
    error("exclusive flags in lower case", "[allocation]\nflags = [\"READ_ONLY\", \"write_only\"]\n", 2, "allocation.flags", "exclude each other"),
    error("a host pointer in a Pool", "[allocation]\nstrategy = \"Pool\"\nflags = [\"alloc_host_ptr\"]\n", 3, "allocation.flags", "host-pointer flags apply to the pool buffer"),
    error("a pool released at once", "[allocation]\nstrategy = \"POOL\"\nkeep = false\n", 3, "allocation.keep", "contradicts strategy \"pool\""),
    error("contexts per device", "[context]\nmode = \"PER-DEVICE\"\ncount = 2\n", 3, "context.count", "several contexts apply to mode = \"shared\""),
    error("a name on two lines", "name = \"a\\nb\"\n", 1, "name", "one line"),
    // The grid.
    error("a grid value twice", "[grid]\n\"allocation.count\" = [10, 10]\n", 2, "grid.\"allocation.count\"[1]", "the same value as [0]"),
    error("a grid axis that is no list", "[grid]\n\"allocation.count\" = 10\n", 2, "grid.\"allocation.count\"", "must be a list of values"),
    error("a grid key unquoted", "[grid]\nallocation.count = [1, 2]\n", 2, "grid.allocation", "write its key in quotes"),
];
