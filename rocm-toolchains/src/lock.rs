//! One writer at a time: an exclusive advisory lock on `$CARGO_ROCM_HOME/.lock`.
//!
//! The operating system releases it when the process exits, however it exits, so a killed
//! install never leaves the home locked.

use std::fs::{File, OpenOptions};

use fs4::fs_std::FileExt;
use rocm_toolkit::home::Home;

use crate::error::{Error, Result};

/// Held while changing the home; released on drop.
#[derive(Debug)]
pub struct HomeLock {
    _file: File,
}

impl HomeLock {
    /// Take the lock, calling `on_wait` once if another process holds it (then blocking).
    pub fn acquire(home: &Home, on_wait: &mut dyn FnMut()) -> Result<HomeLock> {
        let root = home.root();
        std::fs::create_dir_all(root).map_err(|e| Error::io(root, e))?;
        let path = home.lock_path();
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        if !FileExt::try_lock_exclusive(&file).map_err(|e| Error::io(&path, e))? {
            on_wait();
            FileExt::lock_exclusive(&file).map_err(|e| Error::io(&path, e))?;
        }
        Ok(HomeLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn second_holder_waits_for_the_first() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::at(tmp.path());
        let first = HomeLock::acquire(&home, &mut || panic!("nobody holds it yet")).unwrap();
        let (tx, rx) = mpsc::channel();
        let home2 = home.clone();
        let t = std::thread::spawn(move || {
            let mut waited = false;
            let _second = HomeLock::acquire(&home2, &mut || waited = true).unwrap();
            tx.send(waited).unwrap();
        });
        // The second acquirer is blocked while the first holds the lock.
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
        drop(first);
        assert!(rx.recv_timeout(Duration::from_secs(10)).unwrap());
        t.join().unwrap();
    }
}
