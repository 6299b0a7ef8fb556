//! The xe and syncobj numbers, structure sizes and constants of the crate, against
//! `xe_drm.h` and `drm.h` as Debian's linux-libc-dev 7.2.13 ships them (kept in
//! `tests/include/`), as a C compiler reads them.

use clmulti_drm_uapi as uapi;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

#[test]
fn the_xe_uapi_matches_the_kernels_header() {
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/include");
    let dir = std::env::temp_dir().join(format!("xe-uapi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // drm.h includes drm_mode.h (mode setting, which needs newer kernel headers than
    // the machine's): an empty one in the build folder stands in.
    std::fs::write(
        dir.join("drm_mode.h"),
        "/* mode setting: not needed here */\n",
    )
    .unwrap();
    let mut c = String::from(
        "#include <stdio.h>\n#include <drm/drm.h>\n#include <drm/xe_drm.h>\nint main(void) {\n",
    );
    for (name, _) in uapi::XE_REQUESTS.iter().chain(uapi::XE_CONSTANTS) {
        c.push_str(&format!(
            "printf(\"{name} %lu\\n\", (unsigned long)({name}));\n"
        ));
    }
    for (name, _) in uapi::XE_SIZES {
        c.push_str(&format!(
            "printf(\"{name} %zu\\n\", sizeof(struct {name}));\n"
        ));
    }
    c.push_str("return 0;\n}\n");
    std::fs::write(dir.join("xe.c"), c).unwrap();
    let status = Command::new("gcc")
        .arg(format!("-I{}", include.display()))
        .arg(format!("-I{}", dir.display()))
        .args(["xe.c", "-o", "xe"])
        .current_dir(&dir)
        .status()
        .expect("gcc");
    assert!(status.success(), "the C program did not compile");
    let out = Command::new(dir.join("xe")).output().unwrap();
    let c_values: BTreeMap<String, u64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_owned(), v.parse().unwrap()))
        .collect();
    for (name, value) in uapi::XE_REQUESTS.iter().chain(uapi::XE_CONSTANTS) {
        assert_eq!(c_values[*name], *value, "{name}");
    }
    for (name, size) in uapi::XE_SIZES {
        assert_eq!(c_values[*name], *size as u64, "sizeof(struct {name})");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn xe_requests_are_found_by_number_whatever_their_size() {
    for (name, request) in uapi::XE_REQUESTS {
        assert_eq!(uapi::xe_request_name(*request), Some(*name));
        assert_eq!(uapi::request_name(*request), Some(*name));
        // The same number with another size: the kernel's dispatch, not the constant.
        let other_size = (*request & !(0x3fff << 16)) | (8 << 16);
        assert_eq!(uapi::xe_request_name(other_size), Some(*name));
    }
    assert_eq!(
        uapi::xe_nr(uapi::DRM_IOCTL_XE_EXEC),
        Some(uapi::DRM_XE_EXEC)
    );
    assert_eq!(
        uapi::xe_nr(uapi::DRM_IOCTL_GEM_CLOSE),
        None,
        "a core request"
    );
    assert_eq!(uapi::xe_nr(0x6450), None, "past xe's last request");
    assert_eq!(
        uapi::request_name(uapi::DRM_IOCTL_I915_GETPARAM),
        Some("DRM_IOCTL_I915_GETPARAM"),
        "i915's number 0x46 stays i915's at its own size"
    );
}
