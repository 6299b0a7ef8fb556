# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_clmulti_global_optspecs
    string join \n q/quiet v/verbose timeout= h/help V/version
end

function __fish_clmulti_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_clmulti_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_clmulti_using_subcommand
    set -l cmd (__fish_clmulti_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c clmulti -n "__fish_clmulti_needs_command" -l timeout -d 'End the command after this many seconds, loading the runtime included (`run`: each run, which then reports what it measured; default: its max_seconds guard plus a margin). `axpy`, `bench` and `diagnose` are asked to stop (SIGTERM) and report what finished, and killed a tenth later (2 to 10 s) if still running; exit 1 either way. Without it, loading a runtime may take 60 s' -r
complete -c clmulti -n "__fish_clmulti_needs_command" -s q -l quiet -d 'Say nothing on stderr but errors'
complete -c clmulti -n "__fish_clmulti_needs_command" -s v -l verbose -d 'Say more on stderr'
complete -c clmulti -n "__fish_clmulti_needs_command" -s h -l help -d 'Print help'
complete -c clmulti -n "__fish_clmulti_needs_command" -s V -l version -d 'Print version'
complete -c clmulti -n "__fish_clmulti_needs_command" -f -a "devices" -d 'List every OpenCL platform and device with the facts that bound allocation, and the host limits'
complete -c clmulti -n "__fish_clmulti_needs_command" -f -a "check" -d 'Validate scenario files without running them'
complete -c clmulti -n "__fish_clmulti_needs_command" -f -a "run" -d 'Run scenario files and report how far allocation went and why it stopped'
complete -c clmulti -n "__fish_clmulti_needs_command" -f -a "axpy" -d 'Run dAxpy (the seed\'s kernel and the fast one), verify it and measure bandwidth'
complete -c clmulti -n "__fish_clmulti_needs_command" -f -a "bench" -d 'Compare the engine\'s allocation rate with a plain clCreateBuffer loop'
complete -c clmulti -n "__fish_clmulti_needs_command" -f -a "diagnose" -d 'Answer the seed\'s question on this machine: one device, one shared context, one context per device; what sharing costs, what fails, which fix works'
complete -c clmulti -n "__fish_clmulti_needs_command" -f -a "emulate" -d 'Run a program on Intel\'s GPU runtime NEO over emulated Arc A770s (i915) or Arc B580s (xe)'
complete -c clmulti -n "__fish_clmulti_needs_command" -f -a "reproduce" -d 'Write a failed run as a stand-alone C program (ICD loader only) that fails where the run did: the same platform, devices, context mode, flags, size, strategy and limits, holding as many descriptors as clmulti held itself'
complete -c clmulti -n "__fish_clmulti_needs_command" -f -a "trust" -d 'Trust scenario files that load code (a library, a runtime, a layer, a search path, a code cache, any [env] key not on the list of inert keys), as they are now, with the libraries they load: run and the sweep refuse a file whose loads nothing trusts. A changed file or library needs trust again'
complete -c clmulti -n "__fish_clmulti_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c clmulti -n "__fish_clmulti_using_subcommand devices" -l timeout -d 'End the command after this many seconds, loading the runtime included (`run`: each run, which then reports what it measured; default: its max_seconds guard plus a margin). `axpy`, `bench` and `diagnose` are asked to stop (SIGTERM) and report what finished, and killed a tenth later (2 to 10 s) if still running; exit 1 either way. Without it, loading a runtime may take 60 s' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand devices" -l format -d 'Output format' -r -f -a "text\t'Human-readable text (`table` is accepted too)'
json\t'JSON with a `schema_version` (field names in docs/json.md)'"
complete -c clmulti -n "__fish_clmulti_using_subcommand devices" -s q -l quiet -d 'Say nothing on stderr but errors'
complete -c clmulti -n "__fish_clmulti_using_subcommand devices" -s v -l verbose -d 'Say more on stderr'
complete -c clmulti -n "__fish_clmulti_using_subcommand devices" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c clmulti -n "__fish_clmulti_using_subcommand check" -l timeout -d 'End the command after this many seconds, loading the runtime included (`run`: each run, which then reports what it measured; default: its max_seconds guard plus a margin). `axpy`, `bench` and `diagnose` are asked to stop (SIGTERM) and report what finished, and killed a tenth later (2 to 10 s) if still running; exit 1 either way. Without it, loading a runtime may take 60 s' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand check" -l format -d 'Output format' -r -f -a "text\t'Human-readable text (`table` is accepted too)'
json\t'JSON with a `schema_version` (field names in docs/json.md)'"
complete -c clmulti -n "__fish_clmulti_using_subcommand check" -s q -l quiet -d 'Say nothing on stderr but errors'
complete -c clmulti -n "__fish_clmulti_using_subcommand check" -s v -l verbose -d 'Say more on stderr'
complete -c clmulti -n "__fish_clmulti_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c clmulti -n "__fish_clmulti_using_subcommand run" -l timeout -d 'End the command after this many seconds, loading the runtime included (`run`: each run, which then reports what it measured; default: its max_seconds guard plus a margin). `axpy`, `bench` and `diagnose` are asked to stop (SIGTERM) and report what finished, and killed a tenth later (2 to 10 s) if still running; exit 1 either way. Without it, loading a runtime may take 60 s' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand run" -l format -d 'Output format; `json` prints one report per line (JSON Lines)' -r -f -a "text\t'Human-readable text (`table` is accepted too)'
json\t'JSON with a `schema_version` (field names in docs/json.md)'"
complete -c clmulti -n "__fish_clmulti_using_subcommand run" -l index -d 'Run only the N-th run (0-based) of each file\'s grid (`--list` shows them)' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand run" -l allow -d 'A library (or folder) the files may load for this run without being trusted (`clmulti trust`); repeat for several' -r -F
complete -c clmulti -n "__fish_clmulti_using_subcommand run" -s q -l quiet -d 'Say nothing on stderr but errors'
complete -c clmulti -n "__fish_clmulti_using_subcommand run" -s v -l verbose -d 'Say more on stderr'
complete -c clmulti -n "__fish_clmulti_using_subcommand run" -l isolate -d 'Run every run in its own child process: always done (a fresh process for each run, whose stdout and stderr are the runtime\'s own, kept apart from the report); accepted for scripts that pass it'
complete -c clmulti -n "__fish_clmulti_using_subcommand run" -l list -d 'Print each file\'s runs with their `--index` (with `--format json`, one line per run), and run nothing'
complete -c clmulti -n "__fish_clmulti_using_subcommand run" -l experiment -d 'When a run fails, move the limit of each candidate cause (and, when none is confirmed, the buffer size, a release half way, a second context, one more device) and re-run it in fresh processes: the report then says which cause moved the failure, measured'
complete -c clmulti -n "__fish_clmulti_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -l timeout -d 'End the command after this many seconds, loading the runtime included (`run`: each run, which then reports what it measured; default: its max_seconds guard plus a margin). `axpy`, `bench` and `diagnose` are asked to stop (SIGTERM) and report what finished, and killed a tenth later (2 to 10 s) if still running; exit 1 either way. Without it, loading a runtime may take 60 s' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -l n -d 'Elements (floats) for the bandwidth runs (the host must hold a few vectors of 4 n bytes: checked before anything is allocated)' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -l device -d 'Device selector `PLATFORM[:DEVICE]` (name, vendor substring or index); repeat for several. Default: every device of the first platform with GPUs, else of the first platform' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -l partition -d 'Split each selected device into sub-devices first: `equally` (one compute unit each) or compute-unit counts like `1,1`' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -l repeat -d 'Timed repetitions after the warm-up' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -l kernel -d 'Which kernel(s)' -r -f -a "seed\t'The seed\'s dAxpy'
fast\t'The fast float4 kernel'
both\t'Both, side by side'"
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -l format -d 'Output format' -r -f -a "text\t'Human-readable text (`table` is accepted too)'
json\t'JSON with a `schema_version` (field names in docs/json.md)'"
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -l context -d 'With --split: which context modes' -r -f -a "shared\t'One context over every device'
per-device\t'One context per device'
both\t'Both, in one invocation'"
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -l weights -d 'With --split: each device\'s share, e.g. 1,3 (default equal)' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -l device-counts -d 'With --split: also split over the first k devices for each k given, for the efficiency per device count (default: 2, 4, 8... below the device count)' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -s q -l quiet -d 'Say nothing on stderr but errors'
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -s v -l verbose -d 'Say more on stderr'
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -l split -d 'Split one dAxpy over all selected devices at once, in one shared context and in per-device contexts, against one device'
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -l include-transfers -d 'With --split: also time moving the data (host to devices, back, between devices)'
complete -c clmulti -n "__fish_clmulti_using_subcommand axpy" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c clmulti -n "__fish_clmulti_using_subcommand bench" -l timeout -d 'End the command after this many seconds, loading the runtime included (`run`: each run, which then reports what it measured; default: its max_seconds guard plus a margin). `axpy`, `bench` and `diagnose` are asked to stop (SIGTERM) and report what finished, and killed a tenth later (2 to 10 s) if still running; exit 1 either way. Without it, loading a runtime may take 60 s' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand bench" -l device -d 'Device selector `PLATFORM[:DEVICE]`' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand bench" -l count -d 'Buffers per arm to start from; raised until an arm takes --min-seconds' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand bench" -l size -d 'Buffer size' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand bench" -l rounds -d 'Rounds (each runs both arms, in fresh processes); at least 6 for a 95% interval. A busy machine\'s arms vary by a fifth from round to round: 21 rounds put the interval within a few percent of the median' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand bench" -l jobs -d 'Rounds played at a time (at most 64, and no more than --rounds), each arm still its own process. On a host with cores to spare, N at a time give N times the rounds in the same time; each arm\'s memory bound is then a N-th of the quarter one arm may take. Calibration runs one arm alone: with N beyond the free cores the arms share cores and run slower than it measured (both arms alike)' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand bench" -l min-seconds -d 'Seconds the plain loop of one arm should take at least (the count is raised to reach it, within a quarter of the available memory)' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand bench" -l sample-every -d 'The engine\'s sampling interval' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand bench" -l require -d 'The target ratio (default 0.95); exit 1 when the interval lies wholly below it' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand bench" -l format -d 'Output format' -r -f -a "text\t'Human-readable text (`table` is accepted too)'
json\t'JSON with a `schema_version` (field names in docs/json.md)'"
complete -c clmulti -n "__fish_clmulti_using_subcommand bench" -s q -l quiet -d 'Say nothing on stderr but errors'
complete -c clmulti -n "__fish_clmulti_using_subcommand bench" -s v -l verbose -d 'Say more on stderr'
complete -c clmulti -n "__fish_clmulti_using_subcommand bench" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -l timeout -d 'End the command after this many seconds, loading the runtime included (`run`: each run, which then reports what it measured; default: its max_seconds guard plus a margin). `axpy`, `bench` and `diagnose` are asked to stop (SIGTERM) and report what finished, and killed a tenth later (2 to 10 s) if still running; exit 1 either way. Without it, loading a runtime may take 60 s' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -l device -d 'Devices to diagnose (`PLATFORM[:DEVICE]`, repeat); default: every GPU of the first platform with two, else the first platform with two devices' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -l count -d 'Buffers in the `create` runs (the `fill` runs make a tenth as many). The seed failed at ~1000; for the long version use --count 100000 (at least 10)' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -l size -d 'Bytes per buffer (the seed\'s 1 MiB by default)' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -l partition -d 'Split each device into sub-devices first (`equally`, or compute-unit counts such as `1,1`): two devices out of one CPU, for Intel\'s CPU runtime' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -l format -d 'Output format' -r -f -a "text\t'Terminal text (`table` is accepted too, as for the other commands)'
json\t'The versioned JSON shape (docs/json.md)'
markdown\t'Markdown, as diagnose.md'"
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -l out -d 'Also write diagnose.md, diagnose.json, runs.jsonl and index.html here' -r -F
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -l bundle -d 'Also write one archive (.tar.gz) a runtime\'s maintainer can triage: machine, kernel drivers, ICD loader, every loaded library with its package and build ID, the OpenCL part of the environment, emulated parts, the failing calls with errno and stack, the runtime\'s log, the failing run, a line for each other, a reproducer, the page; this machine\'s names as placeholders' -r -F
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -l compare -d 'Put this machine\'s diagnosis of another runtime beside this one (its diagnose.json, from `--out`): what each shared context reached and cost, and whether the other runtime is the upgrade a fix names' -r -F
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -s q -l quiet -d 'Say nothing on stderr but errors'
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -s v -l verbose -d 'Say more on stderr'
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -l no-experiments -d 'Skip the experiments that move each candidate\'s limit (and, when none is confirmed, find the shape of the unseen one): faster, but a cause is then only a candidate'
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -l no-redact -d 'Keep this machine\'s host name, user name, home and checkout paths in the bundle (by default they are placeholders: <host>, <user>, <home>, <checkout>)'
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -l runtime-log -d 'Turn on the runtime\'s own debug log in every case (NEO: NEOReadDebugKeys=1 PrintDebugMessages=1 PrintIoctlEntries=1; PoCL: POCL_DEBUG); the runtime\'s output around each failure is kept in its report (runs.jsonl) and quoted'
complete -c clmulti -n "__fish_clmulti_using_subcommand diagnose" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c clmulti -n "__fish_clmulti_using_subcommand emulate" -l timeout -d 'End the command after this many seconds, loading the runtime included (`run`: each run, which then reports what it measured; default: its max_seconds guard plus a margin). `axpy`, `bench` and `diagnose` are asked to stop (SIGTERM) and report what finished, and killed a tenth later (2 to 10 s) if still running; exit 1 either way. Without it, loading a runtime may take 60 s' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand emulate" -l driver -d 'The kernel driver: i915 or xe (sets NEO\'s EnableDirectSubmission=0, as no GPU runs NEO\'s ring here)' -r -f -a "i915\t'Linux\'s i915 driver: a770, adl-s'
xe\t'Linux\'s xe driver: b580'"
complete -c clmulti -n "__fish_clmulti_using_subcommand emulate" -l model -d 'The device, one of the driver\'s models (default its first): on i915 a770 (Arc A770, discrete) or adl-s (UHD Graphics 770, Alder Lake-S: integrated, no device memory; the newest GPU NEO 20.44 lists); on xe b580 (Arc B580, discrete)' -r -f -a "a770\t'Arc A770, on i915'
adl-s\t'UHD Graphics 770 (Alder Lake-S), on i915'
b580\t'Arc B580, on xe'"
complete -c clmulti -n "__fish_clmulti_using_subcommand emulate" -l devices -d 'Emulated devices (1-8)' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand emulate" -l local-memory -d 'Device memory per device (default: the model\'s, 16 GiB on an A770, 12 GiB on a B580; none on an integrated GPU)' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand emulate" -l report -d 'Write the emulated driver\'s counts to FILE when the program exits' -r -F
complete -c clmulti -n "__fish_clmulti_using_subcommand emulate" -s q -l quiet -d 'Say nothing on stderr but errors'
complete -c clmulti -n "__fish_clmulti_using_subcommand emulate" -s v -l verbose -d 'Say more on stderr'
complete -c clmulti -n "__fish_clmulti_using_subcommand emulate" -l trace -d 'Print every ioctl on an emulated descriptor on stderr'
complete -c clmulti -n "__fish_clmulti_using_subcommand emulate" -l all-runtimes -d 'Keep the ICD loader\'s own choice of runtimes (OCL_ICD_VENDORS as set, or every installed one); by default, with OCL_ICD_VENDORS unset, NEO alone is listed'
complete -c clmulti -n "__fish_clmulti_using_subcommand emulate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c clmulti -n "__fish_clmulti_using_subcommand reproduce" -l timeout -d 'End the command after this many seconds, loading the runtime included (`run`: each run, which then reports what it measured; default: its max_seconds guard plus a margin). `axpy`, `bench` and `diagnose` are asked to stop (SIGTERM) and report what finished, and killed a tenth later (2 to 10 s) if still running; exit 1 either way. Without it, loading a runtime may take 60 s' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand reproduce" -l run -d 'The run to reproduce, by name; default: the first that failed' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand reproduce" -l out -d 'Write the program here (default: stdout)' -r -F
complete -c clmulti -n "__fish_clmulti_using_subcommand reproduce" -s q -l quiet -d 'Say nothing on stderr but errors'
complete -c clmulti -n "__fish_clmulti_using_subcommand reproduce" -s v -l verbose -d 'Say more on stderr'
complete -c clmulti -n "__fish_clmulti_using_subcommand reproduce" -s h -l help -d 'Print help'
complete -c clmulti -n "__fish_clmulti_using_subcommand trust" -l timeout -d 'End the command after this many seconds, loading the runtime included (`run`: each run, which then reports what it measured; default: its max_seconds guard plus a margin). `axpy`, `bench` and `diagnose` are asked to stop (SIGTERM) and report what finished, and killed a tenth later (2 to 10 s) if still running; exit 1 either way. Without it, loading a runtime may take 60 s' -r
complete -c clmulti -n "__fish_clmulti_using_subcommand trust" -s q -l quiet -d 'Say nothing on stderr but errors'
complete -c clmulti -n "__fish_clmulti_using_subcommand trust" -s v -l verbose -d 'Say more on stderr'
complete -c clmulti -n "__fish_clmulti_using_subcommand trust" -l revoke -d 'Take the files\' trust back instead'
complete -c clmulti -n "__fish_clmulti_using_subcommand trust" -l list -d 'List the trusted files (their content hash and path), and trust nothing'
complete -c clmulti -n "__fish_clmulti_using_subcommand trust" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c clmulti -n "__fish_clmulti_using_subcommand help; and not __fish_seen_subcommand_from devices check run axpy bench diagnose emulate reproduce trust help" -f -a "devices" -d 'List every OpenCL platform and device with the facts that bound allocation, and the host limits'
complete -c clmulti -n "__fish_clmulti_using_subcommand help; and not __fish_seen_subcommand_from devices check run axpy bench diagnose emulate reproduce trust help" -f -a "check" -d 'Validate scenario files without running them'
complete -c clmulti -n "__fish_clmulti_using_subcommand help; and not __fish_seen_subcommand_from devices check run axpy bench diagnose emulate reproduce trust help" -f -a "run" -d 'Run scenario files and report how far allocation went and why it stopped'
complete -c clmulti -n "__fish_clmulti_using_subcommand help; and not __fish_seen_subcommand_from devices check run axpy bench diagnose emulate reproduce trust help" -f -a "axpy" -d 'Run dAxpy (the seed\'s kernel and the fast one), verify it and measure bandwidth'
complete -c clmulti -n "__fish_clmulti_using_subcommand help; and not __fish_seen_subcommand_from devices check run axpy bench diagnose emulate reproduce trust help" -f -a "bench" -d 'Compare the engine\'s allocation rate with a plain clCreateBuffer loop'
complete -c clmulti -n "__fish_clmulti_using_subcommand help; and not __fish_seen_subcommand_from devices check run axpy bench diagnose emulate reproduce trust help" -f -a "diagnose" -d 'Answer the seed\'s question on this machine: one device, one shared context, one context per device; what sharing costs, what fails, which fix works'
complete -c clmulti -n "__fish_clmulti_using_subcommand help; and not __fish_seen_subcommand_from devices check run axpy bench diagnose emulate reproduce trust help" -f -a "emulate" -d 'Run a program on Intel\'s GPU runtime NEO over emulated Arc A770s (i915) or Arc B580s (xe)'
complete -c clmulti -n "__fish_clmulti_using_subcommand help; and not __fish_seen_subcommand_from devices check run axpy bench diagnose emulate reproduce trust help" -f -a "reproduce" -d 'Write a failed run as a stand-alone C program (ICD loader only) that fails where the run did: the same platform, devices, context mode, flags, size, strategy and limits, holding as many descriptors as clmulti held itself'
complete -c clmulti -n "__fish_clmulti_using_subcommand help; and not __fish_seen_subcommand_from devices check run axpy bench diagnose emulate reproduce trust help" -f -a "trust" -d 'Trust scenario files that load code (a library, a runtime, a layer, a search path, a code cache, any [env] key not on the list of inert keys), as they are now, with the libraries they load: run and the sweep refuse a file whose loads nothing trusts. A changed file or library needs trust again'
complete -c clmulti -n "__fish_clmulti_using_subcommand help; and not __fish_seen_subcommand_from devices check run axpy bench diagnose emulate reproduce trust help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
