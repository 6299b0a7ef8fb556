//! Mappings: `mmap`, `munmap`, `mremap`, `mprotect`, counted and their failures
//! recorded with their arguments.

use super::*;

/// # Safety
/// `mmap`'s contract.
unsafe fn mmap_with(real: Mmap, call: MmapArgs) -> *mut c_void {
    // SAFETY: passing the caller's arguments on.
    let p = unsafe { call.pass_on(real) };
    let e = errno();
    count(Kind::Mmap.key());
    if p == libc::MAP_FAILED {
        failed(
            "mmap",
            || {
                format!(
                    "{:?}, {}, {}, {}, {:#x}",
                    call.addr,
                    call.len,
                    names::mmap_words(call.prot, call.flags),
                    call.fd,
                    call.offset
                )
            },
            e,
        );
    }
    p
}

clmulti_contract::libc_mmap_family!(mmap_with);

/// # Safety
/// libc's `munmap`.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    let r = call_next!("munmap" as unsafe extern "C" fn(*mut c_void, size_t) -> c_int, (addr, len) else -1);
    fd_call(r, Kind::Munmap, "munmap", || format!("{addr:?}, {len}"))
}

/// # Safety
/// libc's `mremap` (its fifth argument, when there is one, in the same register).
#[no_mangle]
pub unsafe extern "C" fn mremap(
    old: *mut c_void,
    old_len: size_t,
    new_len: size_t,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    let Some(real) = libc_next!(
        "mremap"
            as unsafe extern "C" fn(*mut c_void, size_t, size_t, c_int, *mut c_void) -> *mut c_void
    ) else {
        return enosys(libc::MAP_FAILED);
    };
    // SAFETY: passing the caller's arguments on.
    let p = unsafe { real(old, old_len, new_len, flags, new_addr) };
    let e = errno();
    count(Kind::Mremap.key());
    if p == libc::MAP_FAILED {
        failed(
            "mremap",
            || format!("{old:?}, {old_len}, {new_len}, {flags:#x}"),
            e,
        );
    }
    p
}

/// # Safety
/// libc's `mprotect`.
#[no_mangle]
pub unsafe extern "C" fn mprotect(addr: *mut c_void, len: size_t, prot: c_int) -> c_int {
    let r = call_next!("mprotect" as unsafe extern "C" fn(*mut c_void, size_t, c_int) -> c_int, (addr, len, prot) else -1);
    fd_call(r, Kind::Mprotect, "mprotect", || {
        format!("{addr:?}, {len}, {prot:#x}")
    })
}
