//! The shim both preloaded libraries (`clmulti-kmd-emu`, `clmulti-trace`) interpose
//! libc through: the next definition of a function (`dlsym(RTLD_NEXT)`), looked up
//! once and cached without a lock, the thread's errno, and the open family's entry
//! points. Nothing here allocates: these run inside every `open` and `mmap` of the
//! process, the allocator's own included.
//!
//! Variadic entry points (`open`, `openat`) take their optional argument as a plain
//! parameter: on x86_64 and aarch64 Linux the caller passes it in the same register
//! either way.

use libc::{c_char, c_int, c_uint, FILE};

/// libc's `openat`, where every open variant ends.
pub type OpenAt = unsafe extern "C" fn(c_int, *const c_char, c_int, c_uint) -> c_int;
/// libc's `mmap` (and `mmap64`).
pub type Mmap = unsafe extern "C" fn(
    *mut libc::c_void,
    libc::size_t,
    c_int,
    c_int,
    c_int,
    libc::off_t,
) -> *mut libc::c_void;
/// libc's `fopen` (and `fopen64`).
pub type Fopen = unsafe extern "C" fn(*const c_char, *const c_char) -> *mut FILE;

/// The next definition of a libc function (`libc_next!("mmap" as Mmap)`, or
/// `libc_next!(@ident stat as Stat)` inside another macro), looked up once per call
/// site: `None` where the process's libc lacks it, which the caller answers with
/// ENOSYS ([`enosys`]) instead of a crash.
#[macro_export]
macro_rules! libc_next {
    (@ident $name:ident as $ty:ty) => {
        $crate::libc_next!(@symbol concat!(stringify!($name), "\0"), $ty)
    };
    ($name:literal as $ty:ty) => {
        $crate::libc_next!(@symbol concat!($name, "\0"), $ty)
    };
    (@symbol $symbol:expr, $ty:ty) => {{
        static ADDRESS: ::core::sync::atomic::AtomicUsize = ::core::sync::atomic::AtomicUsize::new(0);
        let mut address = ADDRESS.load(::core::sync::atomic::Ordering::Relaxed);
        if address == 0 {
            // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name.
            address = unsafe {
                $crate::interpose::dlsym_next($symbol.as_ptr().cast())
            } as usize;
            ADDRESS.store(address, ::core::sync::atomic::Ordering::Relaxed);
        }
        // SAFETY: the symbol is libc's function of this signature (or null: a libc
        // without it).
        (address != 0).then(|| unsafe { ::core::mem::transmute::<usize, $ty>(address) })
    }};
}

/// Calls libc's next `name` with `args`, or returns `enosys(fail)` from the calling
/// function where libc has none: the preamble every interposed function shares.
/// `call_next!("close" as unsafe extern "C" fn(c_int) -> c_int, (fd) else -1)`.
#[macro_export]
macro_rules! call_next {
    ($name:literal as $ty:ty, ($($arg:expr),* $(,)?) else $fail:expr) => {
        match $crate::libc_next!($name as $ty) {
            // SAFETY: libc's function of this signature, given the caller's arguments.
            Some(real) => unsafe { real($($arg),*) },
            None => return $crate::interpose::enosys($fail),
        }
    };
}

/// `dlsym(RTLD_NEXT, name)`, for [`libc_next!`].
///
/// # Safety
/// `name` is NUL-terminated.
#[doc(hidden)]
#[inline]
pub unsafe fn dlsym_next(name: *const c_char) -> *mut libc::c_void {
    // SAFETY: the caller's NUL-terminated name.
    unsafe { libc::dlsym(libc::RTLD_NEXT, name) }
}

/// The thread's errno.
#[inline]
pub fn errno() -> c_int {
    // SAFETY: the thread's errno location.
    unsafe { *libc::__errno_location() }
}

/// Sets the thread's errno.
#[inline]
pub fn set_errno(errno: c_int) {
    // SAFETY: the thread's errno location.
    unsafe { *libc::__errno_location() = errno };
}

/// `value`, with errno set to ENOSYS: what an entry point returns when libc lacks the
/// function it would pass the call on to.
#[inline]
pub fn enosys<T>(value: T) -> T {
    set_errno(libc::ENOSYS);
    value
}

/// Defines the open family's entry points (`open`, `open64`, `__open_2`,
/// `__open64_2`, `openat`, `openat64`, `__openat_2`, `__openat64_2`, `fopen`,
/// `fopen64`) over two functions of the calling crate, so that every variant goes
/// through one place:
///
/// - `open_at: unsafe fn(dirfd: c_int, path: *const c_char, flags: c_int, mode: c_uint) -> c_int`
///   (`open` passes `AT_FDCWD`; the fortified `__open_2` forms, mode 0);
/// - `fopen: unsafe fn(real: Option<Fopen>, path: *const c_char, mode: *const c_char) -> *mut FILE`
///   (libc's own `fopen` opens inside libc, where no preload sees it).
#[macro_export]
macro_rules! libc_open_family {
    (open_at: $open_at:path, fopen: $fopen:path $(,)?) => {
        $crate::libc_open_family!(@path [open, open64] $open_at);
        $crate::libc_open_family!(@path2 [__open_2, __open64_2] $open_at);
        $crate::libc_open_family!(@at [openat, openat64] $open_at);
        $crate::libc_open_family!(@at2 [__openat_2, __openat64_2] $open_at);
        $crate::libc_open_family!(@fopen fopen "fopen" $fopen);
        $crate::libc_open_family!(@fopen fopen64 "fopen64" $fopen);
    };
    (@path [$($name:ident),+] $open_at:path) => {$(
        /// # Safety
        /// libc's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            path: *const $crate::libc::c_char,
            flags: $crate::libc::c_int,
            mode: $crate::libc::c_uint,
        ) -> $crate::libc::c_int {
            // SAFETY: the caller's contract.
            unsafe { $open_at($crate::libc::AT_FDCWD, path, flags, mode) }
        }
    )+};
    (@path2 [$($name:ident),+] $open_at:path) => {$(
        /// # Safety
        /// libc's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            path: *const $crate::libc::c_char,
            flags: $crate::libc::c_int,
        ) -> $crate::libc::c_int {
            // SAFETY: the caller's contract.
            unsafe { $open_at($crate::libc::AT_FDCWD, path, flags, 0) }
        }
    )+};
    (@at [$($name:ident),+] $open_at:path) => {$(
        /// # Safety
        /// libc's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dirfd: $crate::libc::c_int,
            path: *const $crate::libc::c_char,
            flags: $crate::libc::c_int,
            mode: $crate::libc::c_uint,
        ) -> $crate::libc::c_int {
            // SAFETY: the caller's contract.
            unsafe { $open_at(dirfd, path, flags, mode) }
        }
    )+};
    (@at2 [$($name:ident),+] $open_at:path) => {$(
        /// # Safety
        /// libc's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dirfd: $crate::libc::c_int,
            path: *const $crate::libc::c_char,
            flags: $crate::libc::c_int,
        ) -> $crate::libc::c_int {
            // SAFETY: the caller's contract.
            unsafe { $open_at(dirfd, path, flags, 0) }
        }
    )+};
    (@fopen $name:ident $symbol:literal $fopen:path) => {
        /// # Safety
        /// libc's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            path: *const $crate::libc::c_char,
            mode: *const $crate::libc::c_char,
        ) -> *mut $crate::libc::FILE {
            let real = $crate::libc_next!($symbol as $crate::interpose::Fopen);
            // SAFETY: the caller's contract.
            unsafe { $fopen(real, path, mode) }
        }
    };
}

/// An `mmap` call's arguments, as the entry point received them.
#[derive(Debug, Clone, Copy)]
pub struct MmapArgs {
    /// The address asked for (a hint, or with `MAP_FIXED` the place).
    pub addr: *mut libc::c_void,
    /// Bytes.
    pub len: libc::size_t,
    /// `PROT_*`.
    pub prot: c_int,
    /// `MAP_*`.
    pub flags: c_int,
    /// The descriptor mapped, or -1.
    pub fd: c_int,
    /// The offset in it, bytes.
    pub offset: libc::off_t,
}

impl MmapArgs {
    /// The call, passed on to `real` as it came.
    ///
    /// # Safety
    /// `mmap`'s contract: the caller's arguments.
    #[inline]
    pub unsafe fn pass_on(self, real: Mmap) -> *mut libc::c_void {
        // SAFETY: the caller's contract.
        unsafe {
            real(
                self.addr,
                self.len,
                self.prot,
                self.flags,
                self.fd,
                self.offset,
            )
        }
    }
}

/// Defines `mmap` and `mmap64` over one function of the calling crate,
/// `mmap_with: unsafe fn(real: Mmap, call: MmapArgs) -> *mut c_void`, handed the next
/// definition of the entry point called (a libc without it: `MAP_FAILED`, ENOSYS).
#[macro_export]
macro_rules! libc_mmap_family {
    ($mmap_with:path) => {
        $crate::libc_mmap_family!(@one mmap "mmap" $mmap_with);
        $crate::libc_mmap_family!(@one mmap64 "mmap64" $mmap_with);
    };
    (@one $name:ident $symbol:literal $mmap_with:path) => {
        /// # Safety
        /// libc's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            addr: *mut $crate::libc::c_void,
            len: $crate::libc::size_t,
            prot: $crate::libc::c_int,
            flags: $crate::libc::c_int,
            fd: $crate::libc::c_int,
            offset: $crate::libc::off_t,
        ) -> *mut $crate::libc::c_void {
            let Some(real) = $crate::libc_next!($symbol as $crate::interpose::Mmap) else {
                return $crate::interpose::enosys($crate::libc::MAP_FAILED);
            };
            let call = $crate::interpose::MmapArgs {
                addr,
                len,
                prot,
                flags,
                fd,
                offset,
            };
            // SAFETY: the caller's contract.
            unsafe { $mmap_with(real, call) }
        }
    };
}
