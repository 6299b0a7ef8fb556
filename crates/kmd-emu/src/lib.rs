//! # clmulti-kmd-emu: Intel's GPU runtime on its real kernel-driver path, without a GPU
//!
//! Intel's OpenCL runtime (NEO, intel/compute-runtime) finds Arc GPUs through files
//! and ioctls of the Linux i915 driver. This crate builds a shared library that, when
//! preloaded (`LD_PRELOAD`), answers those files and ioctls as i915 does on N (1-8)
//! Arc A770s (DG2, PCI id 0x56a0, 16 GiB each), or on N integrated UHD Graphics 770
//! (Alder Lake-S, 0x4680, system memory only: `CLMULTI_KMD_EMU_MODEL=adl-s`, the newest
//! GPU NEO 20.44 lists; no machine has two). NEO then runs its own Linux code path,
//! unmodified, from platform discovery to buffer release: the path the seed's failure
//! (one context over two A770s, `CL_OUT_OF_HOST_MEMORY (-6)` near 1000 buffers) comes
//! from. Nothing runs on a GPU: submissions complete at once, and only the writes the
//! runtime waits for (post-sync tags, timestamps) are made.
//!
//! ```sh
//! cargo build -p clmulti-kmd-emu
//! LD_PRELOAD=$PWD/target/debug/libclmulti_kmd_emu.so CLMULTI_KMD_EMU_DEVICES=2 \
//!     OCL_ICD_VENDORS=$PWD/.intel-gpu/vendors clinfo -l
//! ```
//! (`clmulti emulate --devices 2 -- clinfo -l` does the same, with a label saying so.)
//!
//! With `CLMULTI_KMD_EMU_DRIVER=xe` it is Linux's xe driver on N Arc B580s (Battlemage,
//! PCI id 0xe20b, 12 GiB each) instead: [`xe`] (`clmulti emulate --driver xe`; NEO 26.27
//! then needs `NEOReadDebugKeys=1 EnableDirectSubmission=0`, which `emulate` sets). A
//! device is a model of the table in [`config`] (`CLMULTI_KMD_EMU_MODEL`), and each
//! model has its driver: the A770 and the Alder Lake-S are i915's, the B580 is xe's.
//!
//! ## What it presents
//! - `/dev/dri/renderD128..` and `card0..`, `/dev/dri/by-path/pci-<bdf>-{render,card}`,
//!   and the sysfs files NEO reads (`/sys/bus/pci/devices/<bdf>/drm/cardN/...`,
//!   `/sys/dev/char/226:N`, `/sys/class/drm`): a real folder tree
//!   (`CLMULTI_KMD_EMU_ROOT`, or one made for the process) that those paths are sent to;
//!   what the kernel returns naming the folder is named back, so the process sees
//!   `/dev/dri/renderD128`.
//! - The ioctls of `clmulti-drm-uapi`: `DRM_IOCTL_VERSION` ("i915"), `I915_GETPARAM`, `I915_QUERY`
//!   (topology, engines, memory regions), GEM objects (`GEM_CREATE[_EXT]`, `USERPTR`,
//!   `GEM_CLOSE`, `MMAP_OFFSET` and `mmap`), PRIME export and import, VMs, contexts and
//!   their parameters, `EXECBUFFER2`, `GEM_WAIT`, `REG_READ` (the timestamp).
//! - The kernel's view: `/proc/<pid>/fdinfo/<fd>` of a render node in the
//!   drm-usage-stats format (`drm-driver: i915`, `drm-pdev`, `drm-client-id`,
//!   `drm-total-system0`, `drm-resident-local0`...), and of an exported dma-buf
//!   (`exp_name: i915`, `size:`); `readlink` of an exported dma-buf fd is `/dmabuf:`.
//!
//! ## The kernel's rules it keeps, and none it adds
//! Render nodes and dma-bufs are real descriptors, so they count against
//! `RLIMIT_NOFILE` and an export fails with `EMFILE` where the kernel's would. Objects
//! round up to the region's page; an object larger than its region is refused at
//! creation (`E2BIG`); pages are taken at first use (execution, a domain change; a CPU mapping's pages are
//! real memory taken at first touch, as shmem's; a userptr object's pages are faulted
//! into the process at its first submission, as the kernel's pinning does); a full
//! device memory evicts idle objects (as TTM does) and fails only a submission whose
//! objects cannot fit (`ENOSPC`). CPU mappings are real shared memory (mapping an
//! object twice aliases it). Per process: two processes each see whole devices.
//!
//! ## What it counts
//! `/run/clmulti-kmd-emu/counts` (a live file of the process, only under the
//! emulation) and, at exit, the file `CLMULTI_KMD_EMU_REPORT` names: `key: value` lines,
//! per device and region (`objects-0-system0`, `objects-created-0-local0`,
//! `bytes-...`, `resident-bytes-...`), and `maps`, `exports`, `imports`, `userptrs`,
//! `files`, `vms`, `contexts` (live, and `<name>-created` since the start),
//! `userptr-bytes` (of the system region's bytes, the process's own pages),
//! `execbuffers`, `post-sync-writes`, `evictions`, `failed-ioctls`; `devices`,
//! `pci-id` (the model's, which says the driver too) and `local-bytes` say what is
//! emulated. On xe, regions are xe's (`gtt`, `vram0`) and it adds
//! `deferred-objects-<device>-<region>` (objects created with DEFER_BACKING), `vm-binds`,
//! `exec-queues`, `syncobjs` (live and `-created`), `vm-unbinds`, `vm-prefetches`,
//! `execs`, `user-fence-writes`, `madvises`.
//!
//! ## What it is not
//! No kernel runs: GPU work, page faults, the kernel's own memory and fence timing are
//! not modelled; fdinfo figures are the model's. It catches calls made through libc's
//! dynamic symbols (as NEO 22.43 and 26.x make them), not raw `syscall()`.
//!
//! Environment: [`config::env`].

pub mod batch;
pub mod config;
pub mod files;
pub mod ioctl;
pub mod model;
#[cfg(not(test))]
mod preload;
pub mod vfs;
pub mod xe;
