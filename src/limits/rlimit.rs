//! Raises the soft RLIMIT_NOFILE to the hard limit, so thousands of clients (each with backend
//! connections) fit; the usual soft default of 1024 would make accept fail early.

/// Returns (soft, hard) after the change.
pub fn raise_nofile() -> Result<(u64, u64), std::io::Error> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        let want = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        lim = want;
    }
    Ok((lim.rlim_cur, lim.rlim_max))
}
