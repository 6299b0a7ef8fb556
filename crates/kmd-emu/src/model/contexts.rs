//! Address spaces (VMs) and GPU contexts of each client, as i915 hands them out.

use super::*;

impl Driver {
    /// `GEM_VM_CREATE`.
    pub fn vm_create(&mut self, fd: i32) -> Result<u32, Errno> {
        let file = self.file(fd)?;
        let id = file.next_vm;
        file.next_vm += 1;
        file.vms.push(id);
        self.counts.vms.up();
        Ok(id)
    }

    /// `GEM_VM_DESTROY`.
    pub fn vm_destroy(&mut self, fd: i32, vm: u32) -> Result<(), Errno> {
        let file = self.file(fd)?;
        let at = file.vms.iter().position(|&v| v == vm).ok_or(libc::ENOENT)?;
        file.vms.remove(at);
        self.counts.vms.down();
        Ok(())
    }

    /// `GEM_CONTEXT_CREATE_EXT`, with the VM a `SETPARAM` extension gave (0: its own).
    pub fn context_create(&mut self, fd: i32, vm: u32) -> Result<u32, Errno> {
        let file = self.file(fd)?;
        if vm != 0 && !file.vms.contains(&vm) {
            return Err(libc::ENOENT);
        }
        let id = file.next_context;
        file.next_context += 1;
        file.contexts.insert(id, vm);
        self.counts.contexts.up();
        Ok(id)
    }

    /// `GEM_CONTEXT_DESTROY`.
    pub fn context_destroy(&mut self, fd: i32, context: u32) -> Result<(), Errno> {
        self.file(fd)?
            .contexts
            .remove(&context)
            .ok_or(libc::ENOENT)?;
        self.counts.contexts.down();
        Ok(())
    }

    /// A context's VM (`GETPARAM VM`); context 0 is the file's default.
    pub fn context_vm(&mut self, fd: i32, context: u32) -> Result<u32, Errno> {
        let file = self.file(fd)?;
        if context == 0 {
            return Ok(0);
        }
        file.contexts.get(&context).copied().ok_or(libc::ENOENT)
    }

    /// Sets a context's VM (`SETPARAM VM`).
    pub fn set_context_vm(&mut self, fd: i32, context: u32, vm: u32) -> Result<(), Errno> {
        let file = self.file(fd)?;
        if !file.vms.contains(&vm) {
            return Err(libc::ENOENT);
        }
        let slot = file.contexts.get_mut(&context).ok_or(libc::ENOENT)?;
        *slot = vm;
        Ok(())
    }

    /// Whether a context exists in the file (0, the default, always does).
    pub fn has_context(&mut self, fd: i32, context: u32) -> Result<bool, Errno> {
        Ok(context == 0 || self.file(fd)?.contexts.contains_key(&context))
    }
}
