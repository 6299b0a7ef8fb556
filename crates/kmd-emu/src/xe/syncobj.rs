//! The DRM core's syncobjs (drm_syncobj.c) on an xe file: binary and timeline
//! synchronisation objects. Work completes when it is submitted here, so a syncobj is
//! signalled or has nothing pending: a wait either holds at once or times out.

use super::vm::read_array;
use super::*;

/// Answers syncobj request number `nr` (0xbf to 0xcd).
///
/// # Safety
/// As [`render_ioctl`].
pub(super) unsafe fn ioctl(
    driver: &mut Driver,
    fd: i32,
    nr: u8,
    request: u64,
    arg: *mut c_void,
) -> Result<Reply, Errno> {
    // SAFETY: the caller's contract, for each request's structure.
    unsafe {
        match nr {
            0xbf => with_arg(arg, request, |c: &mut SyncobjCreate| {
                if c.flags & !DRM_SYNCOBJ_CREATE_SIGNALED != 0 {
                    return Err(libc::EINVAL);
                }
                c.handle = driver.syncobj_create(fd, c.flags != 0)?;
                Ok(0)
            }),
            0xc0 => with_arg(arg, request, |d: &mut SyncobjDestroy| {
                if d.pad != 0 {
                    return Err(libc::EINVAL);
                }
                driver.syncobj_destroy(fd, d.handle).map(|()| 0)
            }),
            0xc3 => with_arg(arg, request, |w: &mut SyncobjWait| {
                let handles: Vec<u32> = read_array(w.handles, w.count_handles as usize)?;
                let points = vec![0; handles.len()];
                w.first_signaled = wait(driver, fd, &handles, &points, w.flags)?;
                Ok(0)
            }),
            0xca => with_arg(arg, request, |w: &mut SyncobjTimelineWait| {
                let n = w.count_handles as usize;
                let handles: Vec<u32> = read_array(w.handles, n)?;
                let points: Vec<u64> = read_array(w.points, n)?;
                w.first_signaled = wait(driver, fd, &handles, &points, w.flags)?;
                Ok(0)
            }),
            0xc4 | 0xc5 => with_arg(arg, request, |a: &mut SyncobjArray| {
                if a.pad != 0 {
                    return Err(libc::EINVAL);
                }
                let handles: Vec<u32> = read_array(a.handles, a.count_handles as usize)?;
                for &h in &handles {
                    driver.syncobj(fd, h).map_err(|_| libc::ENOENT)?;
                }
                for h in handles {
                    driver.syncobj(fd, h)?.signaled = nr == 0xc5;
                }
                Ok(0)
            }),
            0xcb | 0xcd => with_arg(arg, request, |a: &mut SyncobjTimelineArray| {
                timeline(driver, fd, nr == 0xcd, a)
            }),
            // Export and import as descriptors, and transfers: not modelled.
            0xc1 | 0xc2 | 0xcc => Err(libc::EOPNOTSUPP),
            _ => Err(libc::ENOTTY),
        }
    }
}

/// Waits for one (or with `WAIT_ALL`, every) syncobj: the index of the first signalled
/// one; `EINVAL` for a syncobj without a fence unless `WAIT_FOR_SUBMIT`, which waits
/// for a submission no one makes here: `ETIME` (at once, not after the timeout).
fn wait(
    driver: &mut Driver,
    fd: i32,
    handles: &[u32],
    points: &[u64],
    flags: u32,
) -> Result<u32, Errno> {
    if handles.is_empty() || flags & !0xf != 0 {
        return Err(libc::EINVAL);
    }
    let mut done = Vec::with_capacity(handles.len());
    for (&h, &point) in handles.iter().zip(points) {
        let state = *driver.syncobj(fd, h).map_err(|_| libc::ENOENT)?;
        done.push(state.signaled && point == 0 || point != 0 && state.point >= point);
    }
    let all = flags & DRM_SYNCOBJ_WAIT_FLAGS_WAIT_ALL != 0;
    let first = done.iter().position(|&d| d);
    match first {
        Some(i) if !all || done.iter().all(|&d| d) => Ok(i as u32),
        // Nothing is pending here: a syncobj not signalled has no fence.
        _ if flags & DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT == 0 => Err(libc::EINVAL),
        _ => Err(libc::ETIME),
    }
}

/// `TIMELINE_SIGNAL` (raise each point) or `QUERY` (read each point back).
fn timeline(
    driver: &mut Driver,
    fd: i32,
    raise: bool,
    a: &SyncobjTimelineArray,
) -> Result<i32, Errno> {
    let n = a.count_handles as usize;
    // SAFETY: the arrays hold `count_handles` entries (the uAPI).
    let handles: Vec<u32> = unsafe { read_array(a.handles, n)? };
    // SAFETY: as above.
    let mut points: Vec<u64> = unsafe { read_array(a.points, n)? };
    for (i, &h) in handles.iter().enumerate() {
        let state = driver.syncobj(fd, h).map_err(|_| libc::ENOENT)?;
        if raise {
            state.point = state.point.max(points[i]);
        } else {
            points[i] = state.point;
        }
    }
    if !raise && n > 0 {
        // SAFETY: the caller's array of `n` points.
        unsafe { std::ptr::copy_nonoverlapping(points.as_ptr(), a.points as *mut u64, n) };
    }
    Ok(0)
}
