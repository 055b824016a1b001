//! The names of the signals a crashed harness, bench or profiled process dies of, for the
//! messages that say how it ended (`was killed by signal 11 (SIGSEGV)`).

/// `SIGSEGV` for 11: the name of a signal a crashing or killed process commonly dies of (Linux
/// numbering), or `None`.
pub(crate) fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        _ => return None,
    })
}

/// ` (SIGSEGV)` after a signal's number, or nothing for a signal without a common name.
pub fn signal_suffix(signal: i32) -> String {
    signal_name(signal)
        .map(|n| format!(" ({n})"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_signals_are_named() {
        assert_eq!(signal_name(11), Some("SIGSEGV"));
        assert_eq!(signal_suffix(6), " (SIGABRT)");
        assert_eq!(signal_suffix(15), "");
    }
}
