//! What the threads of a start tell the one that gathers them: one [`Event`] per
//! connection, and the log of refused connections ([`Refusals`]).

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::wire::Hello;
use crate::error::ClusterError;

/// Refused connections logged one by one (then only counted).
pub(crate) const MAX_LOGGED: usize = 16;

/// A start that failed: why, and the connection it is about, if any (to tell it too).
pub(super) type GaveUp = Box<(ClusterError, Option<TcpStream>)>;

/// What happened on one connection, for the thread that gathers them.
pub(super) enum Event {
    /// A connection to a process, proven and agreed.
    Peer(usize, TcpStream),
    /// A connection came in (from that address) that proved the key and said hello: to
    /// check here (configuration, index).
    Hello(Hello, TcpStream, SocketAddr),
    /// A connection came in that was not a peer of this run: refused (and logged).
    Refused,
    /// Connecting failed.
    Failed(ClusterError, Option<TcpStream>),
}

/// The refused connections of one start: logged on stderr, the first [`MAX_LOGGED`] one
/// by one, then counted.
pub(super) struct Refusals {
    /// This process's index.
    pub(super) me: usize,
    /// Its address.
    pub(super) listening: String,
    /// Refused so far.
    pub(super) count: AtomicUsize,
}

impl Refusals {
    /// Logs a refused connection from `from`, and why.
    pub(super) fn refuse(&self, from: SocketAddr, why: &str) {
        let n = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        if n <= MAX_LOGGED {
            eprintln!(
                "runsync-cluster: process {} ({}) refused a connection from {from}: {why}; \
                 it waits on for its peers",
                self.me, self.listening
            );
        }
        if n == MAX_LOGGED {
            eprintln!(
                "runsync-cluster: process {} ({}) logs no more refused connections one by \
                 one while starting (it counts them)",
                self.me, self.listening
            );
        }
    }

    /// Logs the count, once the start is over, if some went unlogged.
    pub(super) fn summary(&self) {
        let n = self.count.load(Ordering::Relaxed);
        if n > MAX_LOGGED {
            eprintln!(
                "runsync-cluster: process {} ({}) refused {n} connections in all while \
                 starting",
                self.me, self.listening
            );
        }
    }
}
