//! Small platform helpers: wall-clock time, RFC 3339 formatting, host name
//! and the identity of a process, used to tell whether the process that owns
//! a `running` run is still alive.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the clock is before 1970).
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Formats Unix milliseconds as RFC 3339 UTC (`2024-05-01T12:00:00.123Z`).
pub fn rfc3339_utc(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn read_trimmed(path: &str) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// Best-effort host name: the kernel's on Linux, else `HOSTNAME` /
/// `COMPUTERNAME`. `None` when none is known.
pub(crate) fn host_name() -> Option<String> {
    read_trimmed("/proc/sys/kernel/hostname")
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .or_else(|| std::env::var("COMPUTERNAME").ok().filter(|s| !s.is_empty()))
}

/// State letter and start time (clock ticks since boot) of a process, from
/// `/proc/<pid>/stat`. Linux only; `None` elsewhere or if it does not exist.
fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and ')', so split after
    // the last ')'. Then field 3 (state) is index 0 and field 22 (starttime)
    // is index 19.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, start))
}

/// Who owns a run: enough to decide later whether that process still lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProcessIdentity {
    pub pid: u32,
    pub start_ticks: Option<u64>,
    pub boot_id: Option<String>,
    pub host: Option<String>,
}

/// This process's identity (computed once).
pub(crate) fn current_process() -> &'static ProcessIdentity {
    static ID: OnceLock<ProcessIdentity> = OnceLock::new();
    ID.get_or_init(|| {
        let pid = std::process::id();
        ProcessIdentity {
            pid,
            start_ticks: proc_stat(pid).map(|(_, t)| t),
            boot_id: read_trimmed("/proc/sys/kernel/random/boot_id"),
            host: host_name(),
        }
    })
}

/// True only when we can *prove* the owner is gone:
/// - same boot (Linux boot id) and same host name, and the pid no longer
///   exists, is a zombie, or is a different process (start time differs,
///   i.e. the pid was reused); or
/// - same host name but a different boot id (the machine rebooted).
///
/// Anything else (another host sharing the file, a non-Linux system, missing
/// data) is "not provably dead", so the run keeps its stored status.
pub(crate) fn owner_is_dead(owner: &ProcessIdentity) -> bool {
    let me = current_process();
    let (Some(host), Some(my_host)) = (&owner.host, &me.host) else {
        return false;
    };
    if host != my_host {
        return false;
    }
    match (&owner.boot_id, &me.boot_id) {
        (Some(b), Some(mb)) if b != mb => true,
        (Some(_), Some(_)) => match (owner.start_ticks, proc_stat(owner.pid)) {
            (_, None) => true,
            (_, Some(('Z' | 'X', _))) => true,
            (Some(t), Some((_, now))) => t != now,
            (None, Some(_)) => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_values() {
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_utc(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(rfc3339_utc(1_700_000_000_000), "2023-11-14T22:13:20.000Z");
        assert_eq!(rfc3339_utc(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn current_process_is_alive() {
        assert!(!owner_is_dead(current_process()));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reused_pid_is_dead() {
        let mut other = current_process().clone();
        other.start_ticks = other.start_ticks.map(|t| t + 1);
        assert!(owner_is_dead(&other));
    }
}
