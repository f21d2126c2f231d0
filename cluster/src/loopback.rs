//! Addresses for a cluster's processes on one machine, that nothing else takes meanwhile.
//!
//! The usual way to find a free port — bind port 0, read the port, release it — hands
//! out a port from the system's *ephemeral* range. Until the process meant to listen
//! there binds it, any outgoing connection on the machine may be given that same port as
//! its local end (timely's processes connect to each other all the time), and the
//! listener then fails with "Address already in use". So the ports here come from below
//! the ephemeral range, which the system never hands out by itself.

use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicU32, Ordering};

/// The lowest port handed out.
const FIRST: u32 = 20_000;

/// How many ports this process has looked at so far (each is looked at once).
static NEXT: AtomicU32 = AtomicU32::new(0);

/// `n` addresses on loopback (`127.0.0.1:PORT`), each one free when returned, from a port
/// range the system does not hand out by itself (below its ephemeral range): for the
/// processes of a [`Cluster`](crate::Cluster) run on one machine — tests, demos — as the
/// list each process is given ([`cluster_config`](crate::cluster_config)).
///
/// No two calls in one process return the same port. Processes calling it at the same
/// time start at different places (by process id); one that binds a returned port before
/// the cluster does still wins it, as with any free-port probe.
///
/// # Errors
/// An error when fewer than `n` free ports are left below the ephemeral range.
///
/// # Examples
/// ```
/// let addresses = runsync_cluster::loopback_addresses(2).unwrap();
/// assert_eq!(addresses.len(), 2);
/// assert!(addresses[0].starts_with("127.0.0.1:"));
/// assert_ne!(addresses[0], addresses[1]);
/// ```
pub fn loopback_addresses(n: usize) -> std::io::Result<Vec<String>> {
    let end = ephemeral_start().max(FIRST + 1);
    let span = end - FIRST;
    let offset = std::process::id().wrapping_mul(7_919) % span;
    let mut found = Vec::with_capacity(n);
    while found.len() < n {
        let tried = NEXT.fetch_add(1, Ordering::Relaxed);
        if tried >= span {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AddrNotAvailable,
                format!(
                    "no free loopback port left in {FIRST}..{end} (below the system's \
                     ephemeral ports) for {n} addresses"
                ),
            ));
        }
        // Below `end`, which is at most 65,536: a `u16`.
        let port = (FIRST + (offset + tried) % span) as u16;
        // Free now: nobody listens there (the probe closes at once, no connection, so
        // nothing lingers in TIME_WAIT).
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            found.push(format!("127.0.0.1:{port}"));
        }
    }
    Ok(found)
}

/// The first port of the system's ephemeral range (Linux: `ip_local_port_range`;
/// elsewhere, or unreadable: 32768, the lowest common default).
fn ephemeral_start() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32_768)
        .min(65_536)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_distinct_free_and_below_the_ephemeral_range() {
        let a = loopback_addresses(3).unwrap();
        let b = loopback_addresses(2).unwrap();
        let ports: Vec<u32> = a
            .iter()
            .chain(&b)
            .map(|s| s.rsplit(':').next().unwrap().parse().unwrap())
            .collect();
        let mut unique = ports.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), 5, "{ports:?}");
        for &p in &ports {
            assert!(
                (FIRST..ephemeral_start().max(FIRST + 1)).contains(&p),
                "{p}"
            );
        }
        // Each can be listened on.
        for s in &a {
            TcpListener::bind(s.as_str()).unwrap();
        }
    }
}
