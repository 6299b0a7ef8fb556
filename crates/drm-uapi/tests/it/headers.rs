//! Every request number and structure size of the crate, against the C headers
//! (Debian's libdrm-dev) as a C compiler reads them.

use clmulti_drm_uapi as uapi;
use std::collections::BTreeMap;
use std::process::Command;

#[test]
fn the_uapi_matches_the_c_headers() {
    let header = std::path::Path::new("/usr/include/libdrm/i915_drm.h");
    assert!(
        header.exists(),
        "libdrm-dev is not installed (scripts/setup-tests.sh installs it)"
    );
    let dir = std::env::temp_dir().join(format!("kmd-emu-uapi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut c = String::from("#include <stdio.h>\n#include <fcntl.h>\n#include <libdrm/drm.h>\n#include <libdrm/i915_drm.h>\nint main(void) {\n");
    let requests = [
        ("DRM_IOCTL_VERSION", uapi::DRM_IOCTL_VERSION),
        ("DRM_IOCTL_GEM_CLOSE", uapi::DRM_IOCTL_GEM_CLOSE),
        ("DRM_IOCTL_GET_CAP", uapi::DRM_IOCTL_GET_CAP),
        (
            "DRM_IOCTL_PRIME_HANDLE_TO_FD",
            uapi::DRM_IOCTL_PRIME_HANDLE_TO_FD,
        ),
        (
            "DRM_IOCTL_PRIME_FD_TO_HANDLE",
            uapi::DRM_IOCTL_PRIME_FD_TO_HANDLE,
        ),
        ("DRM_IOCTL_I915_GETPARAM", uapi::DRM_IOCTL_I915_GETPARAM),
        ("DRM_IOCTL_I915_GEM_CREATE", uapi::DRM_IOCTL_I915_GEM_CREATE),
        (
            "DRM_IOCTL_I915_GEM_CREATE_EXT",
            uapi::DRM_IOCTL_I915_GEM_CREATE_EXT,
        ),
        (
            "DRM_IOCTL_I915_GEM_MMAP_OFFSET",
            uapi::DRM_IOCTL_I915_GEM_MMAP_OFFSET,
        ),
        (
            "DRM_IOCTL_I915_GEM_USERPTR",
            uapi::DRM_IOCTL_I915_GEM_USERPTR,
        ),
        (
            "DRM_IOCTL_I915_GEM_EXECBUFFER2",
            uapi::DRM_IOCTL_I915_GEM_EXECBUFFER2,
        ),
        (
            "DRM_IOCTL_I915_GEM_EXECBUFFER2_WR",
            uapi::DRM_IOCTL_I915_GEM_EXECBUFFER2_WR,
        ),
        ("DRM_IOCTL_I915_GEM_WAIT", uapi::DRM_IOCTL_I915_GEM_WAIT),
        (
            "DRM_IOCTL_I915_GEM_CONTEXT_CREATE_EXT",
            uapi::DRM_IOCTL_I915_GEM_CONTEXT_CREATE_EXT,
        ),
        (
            "DRM_IOCTL_I915_GEM_CONTEXT_CREATE",
            uapi::DRM_IOCTL_I915_GEM_CONTEXT_CREATE,
        ),
        (
            "DRM_IOCTL_I915_GEM_CONTEXT_DESTROY",
            uapi::DRM_IOCTL_I915_GEM_CONTEXT_DESTROY,
        ),
        (
            "DRM_IOCTL_I915_GEM_CONTEXT_GETPARAM",
            uapi::DRM_IOCTL_I915_GEM_CONTEXT_GETPARAM,
        ),
        (
            "DRM_IOCTL_I915_GEM_CONTEXT_SETPARAM",
            uapi::DRM_IOCTL_I915_GEM_CONTEXT_SETPARAM,
        ),
        ("DRM_IOCTL_I915_REG_READ", uapi::DRM_IOCTL_I915_REG_READ),
        (
            "DRM_IOCTL_I915_GET_RESET_STATS",
            uapi::DRM_IOCTL_I915_GET_RESET_STATS,
        ),
        ("DRM_IOCTL_I915_QUERY", uapi::DRM_IOCTL_I915_QUERY),
        (
            "DRM_IOCTL_I915_GEM_VM_CREATE",
            uapi::DRM_IOCTL_I915_GEM_VM_CREATE,
        ),
        (
            "DRM_IOCTL_I915_GEM_VM_DESTROY",
            uapi::DRM_IOCTL_I915_GEM_VM_DESTROY,
        ),
        (
            "DRM_IOCTL_I915_GEM_SET_DOMAIN",
            uapi::DRM_IOCTL_I915_GEM_SET_DOMAIN,
        ),
        ("DRM_IOCTL_I915_GEM_BUSY", uapi::DRM_IOCTL_I915_GEM_BUSY),
        (
            "DRM_IOCTL_I915_GEM_MADVISE",
            uapi::DRM_IOCTL_I915_GEM_MADVISE,
        ),
        (
            "DRM_IOCTL_I915_GEM_SET_TILING",
            uapi::DRM_IOCTL_I915_GEM_SET_TILING,
        ),
        (
            "DRM_IOCTL_I915_GEM_GET_TILING",
            uapi::DRM_IOCTL_I915_GEM_GET_TILING,
        ),
        ("I915_TILING_NONE", u64::from(uapi::I915_TILING_NONE)),
        ("I915_TILING_X", u64::from(uapi::I915_TILING_X)),
        ("I915_TILING_Y", u64::from(uapi::I915_TILING_Y)),
    ];
    for (name, _) in &requests {
        c.push_str(&format!(
            "printf(\"{name} %lu\\n\", (unsigned long){name});\n"
        ));
    }
    for (name, _) in uapi::SIZES {
        c.push_str(&format!(
            "printf(\"{name} %zu\\n\", sizeof(struct {name}));\n"
        ));
    }
    c.push_str("return 0;\n}\n");
    std::fs::write(dir.join("uapi.c"), c).unwrap();
    let status = Command::new("gcc")
        .args(["-I/usr/include/libdrm", "uapi.c", "-o", "uapi"])
        .current_dir(&dir)
        .status()
        .expect("gcc");
    assert!(status.success());
    let out = Command::new(dir.join("uapi")).output().unwrap();
    let c_values: BTreeMap<String, u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_owned(), v.parse().unwrap()))
        .collect();
    for (name, value) in requests {
        assert_eq!(c_values[name], value, "{name}");
    }
    for (name, size) in uapi::SIZES {
        assert_eq!(c_values[*name], *size as u64, "sizeof(struct {name})");
    }
    let _ = std::fs::remove_dir_all(dir);
}
