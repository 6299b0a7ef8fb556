//! The kernel memory of this process's memory cgroup: page tables, slabs, kernel
//! stacks, socket buffers, what a run makes the kernel hold that no RSS shows (0.71
//! GiB in one run). Read where the cgroup reports it: v2's `memory.stat` (`kernel`,
//! or the sum of its kernel fields on kernels before that line), v1's
//! `memory.kmem.usage_in_bytes`.

use std::cell::Cell;
use std::path::{Path, PathBuf};

/// v2 `memory.stat` fields that are kernel memory, for kernels without `kernel`.
const KERNEL_FIELDS: [&str; 7] = [
    "kernel_stack",
    "pagetables",
    "sec_pagetables",
    "percpu",
    "sock",
    "vmalloc",
    "slab",
];

/// Where this process's memory cgroup reports its kernel memory.
#[derive(Debug, Clone)]
pub struct KernelMemory {
    file: PathBuf,
    v2: bool,
    last: Cell<u64>,
}

impl KernelMemory {
    /// This process's, on this machine's mounts; `None` where no cgroup reports it.
    pub fn find() -> Option<Self> {
        Self::find_at(Path::new("/proc/self/cgroup"), Path::new("/sys/fs/cgroup"))
    }

    /// Given `/proc/self/cgroup` and the cgroup mount (a test gives a fixture).
    pub fn find_at(proc_cgroup: &Path, mount: &Path) -> Option<Self> {
        let text = std::fs::read_to_string(proc_cgroup).ok()?;
        let mut found = None;
        for line in text.lines() {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let path = path.trim_start_matches('/');
            let (file, v2) = if controllers.is_empty() {
                (mount.join(path).join("memory.stat"), true)
            } else if controllers.split(',').any(|c| c == "memory") {
                (
                    mount
                        .join("memory")
                        .join(path)
                        .join("memory.kmem.usage_in_bytes"),
                    false,
                )
            } else {
                continue;
            };
            if file.is_file() && (v2 || found.is_none()) {
                found = Some(KernelMemory {
                    file,
                    v2,
                    last: Cell::new(0),
                });
            }
        }
        let found = found?;
        found.last.set(found.read_now()?);
        Some(found)
    }

    /// One reading, allocating nothing: the guards read it when the address space
    /// may be all taken, where an allocation would abort the process.
    fn read_now(&self) -> Option<u64> {
        use std::io::Read;
        let mut file = std::fs::File::open(&self.file).ok()?;
        let mut text = [0u8; 8192];
        let mut len = 0;
        while len < text.len() {
            match file.read(&mut text[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(_) => return None,
            }
        }
        parse(std::str::from_utf8(&text[..len]).ok()?, self.v2)
    }

    /// Bytes now; the last reading when the file cannot be read now (at the
    /// descriptor limit, nothing new opens).
    pub fn read(&self) -> u64 {
        if let Some(now) = self.read_now() {
            self.last.set(now);
        }
        self.last.get()
    }
}

/// The kernel memory a cgroup file says, bytes.
pub fn parse(text: &str, v2: bool) -> Option<u64> {
    if !v2 {
        return text.trim().parse().ok();
    }
    let field = |name: &str| {
        text.lines().find_map(|l| {
            l.strip_prefix(name)?
                .strip_prefix(' ')?
                .trim()
                .parse::<u64>()
                .ok()
        })
    };
    field("kernel").or_else(|| {
        KERNEL_FIELDS
            .iter()
            .filter_map(|f| field(f))
            .fold(None, |sum, n| Some(sum.unwrap_or(0) + n))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cgroup_version_says_its_kernel_memory() {
        assert_eq!(parse("90902528\n", false), Some(90_902_528));
        assert_eq!(
            parse("anon 5\nkernel 4096\nkernel_stack 1\n", true),
            Some(4096)
        );
        assert_eq!(
            parse("anon 5\nkernel_stack 100\npagetables 20\nslab 3\n", true),
            Some(123)
        );
        assert_eq!(parse("anon 5\n", true), None);
        let root = std::env::temp_dir().join(format!("clmulti-kmem-{}", std::process::id()));
        let leaf = root.join("memory/job");
        std::fs::create_dir_all(&leaf).unwrap();
        std::fs::write(leaf.join("memory.kmem.usage_in_bytes"), "8192\n").unwrap();
        std::fs::write(root.join("cgroup"), "4:memory:/job\n0::/\n").unwrap();
        let found = KernelMemory::find_at(&root.join("cgroup"), &root).unwrap();
        assert_eq!(found.read(), 8192);
        // Unreadable now: the last reading stands.
        std::fs::remove_file(leaf.join("memory.kmem.usage_in_bytes")).unwrap();
        assert_eq!(found.read(), 8192);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
