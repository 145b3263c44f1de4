//! Timing a whole process and reading its peak memory, as a shell user sees it.
//!
//! `bench run` times `knowledge-db search` processes from start to exit and
//! reports how much memory they held. The kernel keeps each process's peak
//! resident set (`ru_maxrss`, returned by `wait4`), but that number starts from
//! the high-water mark of whatever the process was spawned from: exec records
//! the old address space's peak, and a child of the benchmark (which holds a
//! parsed corpus of about 10 GB at 1M records) would report the benchmark's
//! peak, not its own. So `bench run` starts the timed processes through a small
//! helper, `knowledge-db bench measure -- CMD...`: its own address space is a
//! few MB, the processes it spawns start from that, and it prints what it
//! measured as one line of JSON ([`Measured`]).

use std::ffi::OsString;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use knowledge_db::error::{Error, Result};

/// One finished process.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Measured {
    /// From spawn to exit.
    pub ms: f64,
    /// Peak resident memory of the process (0 where the platform does not say).
    pub peak_rss_mb: f64,
    /// Exited with status 0.
    pub success: bool,
}

/// Runs `command` to its end with its output discarded, in this process
/// (what the `bench measure` helper does). The peak memory is only the
/// command's own when this process is small: see the module doc.
pub fn measure(command: &mut Command) -> std::io::Result<Measured> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let child = command.spawn()?;
    let (success, peak_rss_mb) = wait_with_peak_rss(child)?;
    Ok(Measured {
        ms: started.elapsed().as_secs_f64() * 1000.0,
        peak_rss_mb,
        success,
    })
}

/// Runs `program args...` through the `bench measure` helper of `exe` (the
/// knowledge-db binary), so its peak memory is its own.
pub fn measure_through_helper(exe: &Path, program: &Path, args: &[OsString]) -> Result<Measured> {
    let output = Command::new(exe)
        .args(["bench", "measure", "--"])
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Error::io(exe, e))?;
    if !output.status.success() {
        return Err(Error::Usage(format!(
            "`knowledge-db bench measure` failed ({}) on {}",
            output.status,
            program.display()
        )));
    }
    serde_json::from_slice(&output.stdout).map_err(|e| {
        Error::Usage(format!(
            "`knowledge-db bench measure` printed no measurement ({e}): {}",
            String::from_utf8_lossy(&output.stdout).trim()
        ))
    })
}

/// Waits for `child` and reads its peak RSS from the kernel's accounting
/// (`wait4`), which std's `wait` does not return.
#[cfg(target_os = "linux")]
fn wait_with_peak_rss(child: std::process::Child) -> std::io::Result<(bool, f64)> {
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our own child, not yet waited for (`child` is only
    // dropped, which does not wait); `status` and `usage` are valid for writes.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    if waited < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let success = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    // Linux reports ru_maxrss in kilobytes.
    Ok((success, usage.ru_maxrss as f64 / 1024.0))
}

#[cfg(not(target_os = "linux"))]
fn wait_with_peak_rss(mut child: std::process::Child) -> std::io::Result<(bool, f64)> {
    Ok((child.wait()?.success(), 0.0))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_measured_process_reports_its_exit_and_time() {
        let ok = measure(Command::new("sh").args(["-c", "exit 0"])).unwrap();
        assert!(ok.success && ok.ms > 0.0 && ok.peak_rss_mb > 0.0, "{ok:?}");
        let failed = measure(Command::new("sh").args(["-c", "exit 3"])).unwrap();
        assert!(!failed.success);
    }

    /// `bench run` reads the peak memory of the search processes it times. Linux
    /// starts a spawned process's peak from its parent's, so measured straight
    /// from the benchmark (which holds the whole parsed corpus) every search
    /// reported the benchmark's 15.8 GB at 1M records. Through the helper, a
    /// large parent no longer shows in the child's number.
    #[test]
    fn a_measured_process_reports_its_own_peak_memory_not_its_parents() {
        // The built binary, beside this test's own executable's folder.
        let exe = assert_cmd::cargo::cargo_bin("knowledge-db");
        // Make this (parent) process hold 512 MB.
        let ballast = vec![1u8; 512 << 20];
        let measured = measure_through_helper(&exe, &exe, &["--version".into()]).unwrap();
        assert!(measured.success, "{measured:?}");
        assert!(
            measured.peak_rss_mb > 0.5 && measured.peak_rss_mb < 128.0,
            "`knowledge-db --version` peaked at {} MB",
            measured.peak_rss_mb
        );
        assert!(measured.ms > 0.0);
        std::hint::black_box(&ballast);
    }
}
