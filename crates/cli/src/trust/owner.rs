//! Who could have put a file where it is: a file needs no one's word when no other
//! user could have written it or any folder above it.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Whether a file and every folder above it are owned by root and writable by no
/// one else: a system file.
pub fn system_owned(path: &Path) -> bool {
    path.ancestors()
        .all(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.uid() == 0 && m.mode() & 0o022 == 0))
}

/// Why another user could have written `path` (a real path) or a folder above it,
/// when one could: owned by someone else, or writable by its group or by anyone.
/// Above `root` (a checkout), a folder owned by root and sticky (`/tmp`) is
/// allowed: in it, no one else can replace what is yours.
pub fn writable_by_others(path: &Path, root: &Path) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    for p in path.ancestors() {
        let Ok(m) = std::fs::symlink_metadata(p) else {
            return Some(format!("{} cannot be read", p.display()));
        };
        let sticky_root = m.uid() == 0 && m.mode() & 0o1000 != 0 && !p.starts_with(root);
        if m.uid() != 0 && m.uid() != me {
            return Some(format!("{} is owned by user {}", p.display(), m.uid()));
        }
        if m.mode() & 0o022 != 0 && !sticky_root {
            return Some(format!(
                "{} is writable by {} (mode {:o})",
                p.display(),
                if m.mode() & 0o002 != 0 {
                    "anyone"
                } else {
                    "its group"
                },
                m.mode() & 0o7777
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_folder_others_can_write_is_named() {
        let dir = std::env::temp_dir().join(format!("clmulti-owner-{}", std::process::id()));
        let inner = dir.join("target/debug");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(dir.join("target"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::set_permissions(&inner, std::fs::Permissions::from_mode(0o755)).unwrap();
        let lib = inner.join("lib.so");
        std::fs::write(&lib, "").unwrap();
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o644)).unwrap();
        // /tmp is sticky and root's: allowed above the checkout.
        assert_eq!(writable_by_others(&lib, &dir), None);
        std::fs::set_permissions(dir.join("target"), std::fs::Permissions::from_mode(0o777))
            .unwrap();
        let why = writable_by_others(&lib, &dir).unwrap();
        assert!(why.contains("target is writable by anyone"), "{why}");
        assert!(!system_owned(&lib), "/tmp is writable by anyone");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
