//! `check disk`'s measurement, on the calling thread (blocking file I/O: call it from a
//! plain thread, not a runtime's): the WAL's write pattern as etcd's guidance tests it with
//! fio (`--rw=write --ioengine=sync --fdatasync=1 --size=22m --bs=2300`: small sequential
//! writes into a preallocated file, each followed by fdatasync, each fdatasync timed into an
//! HDR histogram), then sequential bandwidth (64 KiB writes, then one fdatasync). The test
//! files are temp files in the directory, removed when the test ends however it ends (an
//! error, a stop, a panic); only a killed process leaves them.
//!
//! `DiskError` is defined here rather than in `error.rs`: nothing else in the crate fails
//! this way, and this file imports nothing of the crate.
//!
//! ```no_run
//! use std::sync::atomic::AtomicBool;
//! use etcdlat_driver::DiskTest;
//!
//! let report = DiskTest::new("/var/lib/etcd").run(&AtomicBool::new(false))?;
//! println!("{}", report.verdict());
//! # Ok::<(), etcdlat_driver::DiskError>(())
//! ```

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use etcdlat_core::check::DiskReport;
use etcdlat_core::check::disk::{
    BANDWIDTH_TEST_BYTES, BANDWIDTH_WRITE_BYTES, WAL_TEST_BYTES, WAL_WRITE_BYTES,
};
use etcdlat_core::recorder::new_histogram;
use tempfile::NamedTempFile;

/// Why a disk test could not be run to its end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DiskError {
    /// The directory does not exist (or cannot be looked at).
    #[error("{}: {source}", dir.display())]
    Missing {
        /// The directory given.
        dir: PathBuf,
        /// Why it cannot be read.
        #[source]
        source: std::io::Error,
    },
    /// The path is not a directory.
    #[error("{}: not a directory", dir.display())]
    NotADirectory {
        /// The path given.
        dir: PathBuf,
    },
    /// No file can be created in the directory.
    #[error("{}: cannot create a test file in it: {source}", dir.display())]
    NotWritable {
        /// The directory given.
        dir: PathBuf,
        /// The error creating the file.
        #[source]
        source: std::io::Error,
    },
    /// A write, fdatasync or allocation failed midway (a full disk, say).
    #[error("{}: {what}: {source}", dir.display())]
    Io {
        /// The directory.
        dir: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A size given is zero, or a write larger than the test.
    #[error("{0}")]
    Size(String),
    /// The stop flag was set before the test ended.
    #[error("stopped")]
    Stopped,
}

/// A disk test of one directory: sizes default to etcd's guidance's fio job.
#[derive(Debug, Clone)]
#[must_use]
pub struct DiskTest {
    dir: PathBuf,
    write_bytes: u64,
    test_bytes: u64,
    bandwidth_bytes: u64,
}

impl DiskTest {
    /// A test of `dir` with fio's sizes (2,300-byte writes, 22 MiB in all) and 64 MiB of
    /// bandwidth test.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            write_bytes: WAL_WRITE_BYTES,
            test_bytes: WAL_TEST_BYTES,
            bandwidth_bytes: BANDWIDTH_TEST_BYTES,
        }
    }

    /// Bytes of each small write (fio's `--bs`).
    pub fn write_bytes(mut self, bytes: u64) -> Self {
        self.write_bytes = bytes;
        self
    }

    /// Bytes the small writes add up to (fio's `--size`); the last write may be shorter.
    pub fn test_bytes(mut self, bytes: u64) -> Self {
        self.test_bytes = bytes;
        self
    }

    /// Bytes the bandwidth test writes before its fdatasync.
    pub fn bandwidth_bytes(mut self, bytes: u64) -> Self {
        self.bandwidth_bytes = bytes;
        self
    }

    /// Checks the sizes and the directory (that it is one, and that a file can be created
    /// in it) without testing anything, so that bad input is refused before a test starts.
    ///
    /// # Errors
    /// As [`DiskTest::run`], but for a failed write and a stop.
    pub fn check(&self) -> Result<(), DiskError> {
        if self.write_bytes == 0 || self.test_bytes == 0 || self.bandwidth_bytes == 0 {
            return Err(DiskError::Size("sizes must be more than 0".into()));
        }
        if self.write_bytes > self.test_bytes {
            return Err(DiskError::Size(format!(
                "the write size ({} bytes) is larger than the test ({} bytes)",
                self.write_bytes, self.test_bytes
            )));
        }
        let dir = &self.dir;
        let meta = std::fs::metadata(dir)
            .map_err(|source| DiskError::Missing { dir: dir.clone(), source })?;
        if !meta.is_dir() {
            return Err(DiskError::NotADirectory { dir: dir.clone() });
        }
        test_file(dir).map(drop)
    }

    /// Runs the test, checking `stop` between writes.
    ///
    /// # Errors
    /// [`DiskError`]: the directory is missing, not one or not writable, a write failed,
    /// the sizes are unusable, or `stop` was set.
    pub fn run(&self, stop: &AtomicBool) -> Result<DiskReport, DiskError> {
        self.check()?;
        let dir = &self.dir;
        let io =
            |what: &'static str| move |source| DiskError::Io { dir: dir.clone(), what, source };

        let mut wal = test_file(dir)?;
        preallocate(wal.as_file(), self.test_bytes).map_err(io("preallocating the test file"))?;
        let block = pattern(self.write_bytes);
        let mut fdatasync = new_histogram();
        let mut left = self.test_bytes;
        while left > 0 {
            if stop.load(Ordering::Relaxed) {
                return Err(DiskError::Stopped);
            }
            let n = left.min(self.write_bytes) as usize;
            wal.as_file_mut().write_all(&block[..n]).map_err(io("writing"))?;
            let started = Instant::now();
            wal.as_file().sync_data().map_err(io("fdatasync"))?;
            let us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            fdatasync.saturating_record(us);
            left -= n as u64;
        }
        drop(wal);

        let mut seq = test_file(dir)?;
        let block = pattern(BANDWIDTH_WRITE_BYTES);
        let started = Instant::now();
        let mut left = self.bandwidth_bytes;
        while left > 0 {
            if stop.load(Ordering::Relaxed) {
                return Err(DiskError::Stopped);
            }
            let n = left.min(BANDWIDTH_WRITE_BYTES) as usize;
            seq.as_file_mut().write_all(&block[..n]).map_err(io("writing"))?;
            left -= n as u64;
        }
        seq.as_file().sync_data().map_err(io("fdatasync"))?;
        let bandwidth_time = started.elapsed().max(Duration::from_nanos(1));
        drop(seq);

        Ok(DiskReport::new(
            dir.display().to_string(),
            self.write_bytes,
            fdatasync,
            self.bandwidth_bytes,
            bandwidth_time,
        ))
    }
}

/// A new temp file in `dir`, removed when dropped.
fn test_file(dir: &Path) -> Result<NamedTempFile, DiskError> {
    tempfile::Builder::new()
        .prefix(".etcdlat-check-disk-")
        .tempfile_in(dir)
        .map_err(|source| DiskError::NotWritable { dir: dir.to_owned(), source })
}

/// Allocates `bytes` of the file, as etcd preallocates each WAL segment and fio its job's
/// file; a filesystem that cannot is left to allocate as it writes (etcd then fills the
/// segment with zeros instead, which only a filesystem without fallocate needs).
fn preallocate(file: &File, bytes: u64) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use nix::errno::Errno;
        use nix::fcntl::{FallocateFlags, fallocate};
        let len = i64::try_from(bytes).unwrap_or(i64::MAX);
        match fallocate(file, FallocateFlags::empty(), 0, len) {
            Ok(()) | Err(Errno::EOPNOTSUPP) => {}
            Err(e) => return Err(e.into()),
        }
        // The allocation itself is on disk before the clock starts, as etcd's is before a
        // segment is used.
        file.sync_all()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, bytes);
        Ok(())
    }
}

/// `len` bytes that no filesystem compresses to nothing.
fn pattern(len: u64) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_every_fdatasync_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let report = DiskTest::new(dir.path())
            .write_bytes(1000)
            .test_bytes(10_500)
            .bandwidth_bytes(200_000)
            .run(&AtomicBool::new(false))
            .unwrap();
        assert_eq!(report.writes, 11, "ten full writes and a short one, each synced");
        assert_eq!(report.bandwidth_bytes, 200_000);
        assert!(report.bandwidth_mb_per_s > 0.0);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the test files are gone");
    }

    #[test]
    fn a_stop_ends_the_test_and_removes_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let e = DiskTest::new(dir.path()).run(&AtomicBool::new(true)).unwrap_err();
        assert!(matches!(e, DiskError::Stopped), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn bad_directories_and_sizes_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        let missing = dir.path().join("nope");
        let e = DiskTest::new(&missing).run(&stop).unwrap_err();
        assert!(matches!(e, DiskError::Missing { .. }), "{e}");
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let e = DiskTest::new(&file).run(&stop).unwrap_err();
        assert_eq!(e.to_string(), format!("{}: not a directory", file.display()));
        let e = DiskTest::new(dir.path()).write_bytes(10).test_bytes(5).run(&stop).unwrap_err();
        assert!(e.to_string().contains("larger than the test"), "{e}");
    }
}
