//! Why a run failed: [`ClusterError`], one variant per cause, each naming the shard,
//! frame, process and address that apply, and saying what to do about it.
//!
//! A failure of one shard ends every shard, in every process, in the same exchange
//! round, with [`ClusterError::Shard`]: the failing shard, the frame, and the cause —
//! the cause itself (a [`Frame`](ClusterError::Frame), a [`Panic`](ClusterError::Panic),
//! a [`Load`](ClusterError::Load), ...) where it happened, its text
//! ([`Remote`](ClusterError::Remote)) everywhere else. A process that disappears ends the
//! others with [`PeerLost`](ClusterError::PeerLost) or
//! [`PeerTimeout`](ClusterError::PeerTimeout); a start that cannot be agreed on ends
//! every process with [`Mismatch`](ClusterError::Mismatch),
//! [`Unreachable`](ClusterError::Unreachable), [`NoPeer`](ClusterError::NoPeer),
//! [`Key`](ClusterError::Key) or [`Refused`](ClusterError::Refused).

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use runsync::{LoadError, SaveError};

/// Why a [`Cluster::run`](crate::Cluster::run) failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum ClusterError {
    /// timely could not start (a bad configuration: no shard, a process index out of
    /// range, an address count other than the process count).
    Timely(String),
    /// A shard's frame failed (a system or a merge panicked, or a tree crossed regions).
    Frame {
        /// The shard.
        shard: usize,
        /// What runsync said.
        message: String,
    },
    /// An entity could not be sent (a component type not opted into saves).
    Save(SaveError),
    /// A record could not be read (the shards do not register the same types), or a
    /// checkpoint could not be loaded.
    Load(LoadError),
    /// A checkpoint could not be written or read.
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// Code on a shard panicked outside a frame's systems: the partition, the world or
    /// systems builder, a world-wide value's part (a cause, in [`Shard`](Self::Shard)).
    Panic {
        /// The panic's message.
        message: String,
    },
    /// The shards' exchange broke one of its rules (a status missing from a round, a
    /// record of the wrong kind or size): a shard that stopped without saying why, or
    /// processes of different builds (a cause, in [`Shard`](Self::Shard)).
    Protocol {
        /// What was wrong.
        message: String,
    },
    /// The cause of another shard's failure, as that shard told it (a cause, in
    /// [`Shard`](Self::Shard), on every shard but the one that failed).
    Remote {
        /// The failing shard's own error, as text.
        message: String,
    },
    /// A shard failed and every shard stopped in the same exchange round: what every
    /// process returns. The shard that failed gives the cause itself; the others give
    /// its text ([`Remote`](Self::Remote)). With several failures in one round, the
    /// lowest shard's.
    Shard {
        /// The shard that failed.
        shard: usize,
        /// The frame it failed in (0: while starting — building the world, loading a
        /// checkpoint, the first mirrors).
        frame: u64,
        /// Why.
        cause: Box<ClusterError>,
    },
    /// The connection to another process broke during the run (the process died, was
    /// killed, or the network failed).
    PeerLost {
        /// The process.
        process: usize,
        /// Its address.
        address: String,
        /// Its shards.
        shards: Range<usize>,
        /// The frame this process was in (0: while starting).
        frame: u64,
        /// What the connection said.
        cause: String,
    },
    /// No word from some shards for the peer timeout
    /// ([`Cluster::peer_timeout`](crate::Cluster::peer_timeout)) in one exchange round:
    /// their process hangs (stopped, deadlocked, cut off) or their frames take longer.
    PeerTimeout {
        /// The shards not heard from.
        shards: Vec<usize>,
        /// Their processes and addresses (empty when they are threads of this one).
        processes: Vec<(usize, String)>,
        /// The frame this process was in (0: while starting).
        frame: u64,
        /// How long it waited.
        waited: Duration,
    },
    /// The exchange failed on this shard for a reason no connection explains (timely's
    /// own message).
    Exchange {
        /// The shard.
        shard: usize,
        /// The frame it was in.
        frame: u64,
        /// What failed.
        message: String,
    },
    /// While starting: this process could not listen on its own address.
    Bind {
        /// The address (this process's in the address list).
        address: String,
        /// What failed.
        error: std::io::Error,
    },
    /// While starting: another process's address did not answer as a runsync-cluster
    /// process within the connect timeout
    /// ([`Cluster::connect_timeout`](crate::Cluster::connect_timeout)).
    Unreachable {
        /// The process.
        process: usize,
        /// The address that never answered.
        address: String,
        /// How long this process tried.
        waited: Duration,
        /// The last thing that went wrong.
        error: String,
    },
    /// While starting: another process never connected to this one within the connect
    /// timeout.
    NoPeer {
        /// The process that never connected.
        process: usize,
        /// Its address in the address list.
        address: String,
        /// This process's address, where it was expected.
        listening: String,
        /// How long this process waited.
        waited: Duration,
    },
    /// While starting: another process does not run the same cluster (another protocol
    /// version, process or shard count, frames, checksums, world or configuration).
    /// Every process of the pair reports it.
    Mismatch {
        /// The other process (`None`: one whose index means nothing here — another
        /// protocol version, or an index beyond the process count).
        process: Option<usize>,
        /// Its address (where it connected from, when its index means nothing here).
        address: String,
        /// What differs.
        what: &'static str,
        /// Its value here.
        here: String,
        /// Its value there.
        there: String,
        /// How to make them agree.
        fix: &'static str,
    },
    /// While starting: the process at another process's address does not share this
    /// process's cluster key ([`Cluster::key`](crate::Cluster::key)): another key, a key
    /// on one side only, or not a process of this run. Reported by the connecting side;
    /// the other side cannot tell such a connection from a stranger's, refuses it (with a
    /// line on stderr) and waits on, as for any stranger.
    Key {
        /// The process.
        process: usize,
        /// Its address.
        address: String,
        /// What did not agree.
        reason: String,
    },
    /// While starting: another process gave up the start and said why (its own
    /// mismatch with, or timeout waiting for, a third process).
    Refused {
        /// The process.
        process: usize,
        /// Its address.
        address: String,
        /// What it said.
        reason: String,
    },
}

/// "in frame N", or "while starting" for frame 0.
struct At(u64);

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => write!(f, "while starting"),
            n => write!(f, "in frame {n}"),
        }
    }
}

/// A list of shards: `2`, `2, 3`, ...
struct List<'a>(&'a [usize]);

impl fmt::Display for List<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{s}")?;
        }
        Ok(())
    }
}

/// The crate's prefix, which a cause shown inside another error leaves out.
const PREFIX: &str = "runsync-cluster: ";

impl ClusterError {
    /// The message without the crate's prefix (how a cause reads inside another error,
    /// and what a failing shard tells the others).
    pub(crate) fn bare(&self) -> String {
        let text = self.to_string();
        match text.strip_prefix(PREFIX) {
            Some(rest) => rest.to_owned(),
            None => text,
        }
    }

    /// Whether this is a failure another shard told about (a [`Remote`](Self::Remote)
    /// cause), not one that happened here.
    pub(crate) fn is_told(&self) -> bool {
        matches!(self, ClusterError::Shard { cause, .. } if matches!(**cause, ClusterError::Remote { .. }))
    }
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(PREFIX)?;
        match self {
            ClusterError::Timely(m) => write!(f, "timely failed: {m}"),
            ClusterError::Frame { shard, message } => {
                write!(f, "shard {shard}'s frame failed: {message}")
            }
            ClusterError::Save(e) => write!(f, "cannot send an entity: {e}"),
            ClusterError::Load(e) => write!(
                f,
                "cannot read an entity from another shard or a checkpoint (do all shards \
                 register the same types?): {e}"
            ),
            ClusterError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            ClusterError::Panic { message } => write!(
                f,
                "panicked outside the frame's systems (in the partition, the world or \
                 systems builder, or a world-wide value): {message}"
            ),
            ClusterError::Protocol { message } => write!(
                f,
                "the exchange between shards broke its rules: {message} (a shard that \
                 stopped without a word, or processes of different builds)"
            ),
            ClusterError::Remote { message } => write!(f, "{message}"),
            ClusterError::Shard {
                shard,
                frame,
                cause,
            } => write!(
                f,
                "shard {shard} failed {}, so every shard stopped: {}",
                At(*frame),
                cause.bare()
            ),
            ClusterError::PeerLost {
                process,
                address,
                shards,
                frame,
                cause,
            } => write!(
                f,
                "lost process {process} (shards {}..{}, at {address}) {}: {cause}. The \
                 process died, was killed or was cut off; restart every process (from the \
                 last checkpoint: Cluster::resume)",
                shards.start,
                shards.end,
                At(*frame)
            ),
            ClusterError::PeerTimeout {
                shards,
                processes,
                frame,
                waited,
            } => {
                write!(
                    f,
                    "no word from shard(s) {} for {:.1} s {}",
                    List(shards),
                    waited.as_secs_f64(),
                    At(*frame)
                )?;
                for (i, (p, address)) in processes.iter().enumerate() {
                    let sep = if i == 0 { " (" } else { ", " };
                    write!(f, "{sep}process {p} at {address}")?;
                }
                if !processes.is_empty() {
                    write!(f, ")")?;
                }
                write!(
                    f,
                    ": hung, stopped or cut off, or its frames take longer than the peer \
                     timeout (raise it: Cluster::peer_timeout, arena --peer-timeout)"
                )
            }
            ClusterError::Exchange {
                shard,
                frame,
                message,
            } => write!(
                f,
                "the exchange failed on shard {shard} {}: {message} (another process \
                 failed: see its error)",
                At(*frame)
            ),
            ClusterError::Bind { address, error } => write!(
                f,
                "cannot listen on {address} (this process's address in the list): {error}; \
                 give each process an address of its own machine, a port free there"
            ),
            ClusterError::Unreachable {
                process,
                address,
                waited,
                error,
            } => write!(
                f,
                "process {process} at {address} did not answer within {:.1} s ({error}): \
                 start it, check the address list (the same on every process, in process \
                 order), or raise the connect timeout (Cluster::connect_timeout, arena \
                 --connect-timeout)",
                waited.as_secs_f64()
            ),
            ClusterError::NoPeer {
                process,
                address,
                listening,
                waited,
            } => write!(
                f,
                "process {process} (at {address}) did not connect to this process \
                 ({listening}) within {:.1} s: start it with process index {process} and \
                 the same address list, or raise the connect timeout \
                 (Cluster::connect_timeout, arena --connect-timeout)",
                waited.as_secs_f64()
            ),
            ClusterError::Mismatch {
                process,
                address,
                what,
                here,
                there,
                fix,
            } => {
                match process {
                    Some(p) => write!(f, "process {p} (at {address})")?,
                    None => write!(f, "a process connecting from {address}")?,
                }
                write!(
                    f,
                    " does not run the same cluster: {what} is {here} here but {there} there; \
                     {fix}"
                )
            }
            ClusterError::Key {
                process,
                address,
                reason,
            } => write!(
                f,
                "process {process} (at {address}) does not share this process's cluster \
                 key: {reason}; give every process the same key (Cluster::key, \
                 --cluster-key), or none to all"
            ),
            ClusterError::Refused {
                process,
                address,
                reason,
            } => write!(
                f,
                "process {process} (at {address}) gave up the start: {reason}"
            ),
        }
    }
}

impl std::error::Error for ClusterError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClusterError::Save(e) => Some(e),
            ClusterError::Load(e) => Some(e),
            ClusterError::Io { error, .. } | ClusterError::Bind { error, .. } => Some(error),
            ClusterError::Shard { cause, .. } => Some(&**cause),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_failure_names_shard_frame_and_cause_once() {
        let e = ClusterError::Shard {
            shard: 1,
            frame: 5,
            cause: Box::new(ClusterError::Panic {
                message: "boom".into(),
            }),
        };
        let text = e.to_string();
        assert!(
            text.starts_with("runsync-cluster: shard 1 failed in frame 5"),
            "{text}"
        );
        assert!(text.ends_with("boom"), "{text}");
        assert_eq!(text.matches(PREFIX).count(), 1, "{text}");
        let starting = ClusterError::Shard {
            shard: 0,
            frame: 0,
            cause: Box::new(ClusterError::Remote {
                message: "x".into(),
            }),
        };
        assert!(starting.to_string().contains("while starting"));
        assert!(starting.is_told() && !e.is_told());
    }

    #[test]
    fn a_timeout_names_the_silent_shards_and_their_processes() {
        let e = ClusterError::PeerTimeout {
            shards: vec![2, 3],
            processes: vec![(1, "127.0.0.1:7701".into())],
            frame: 17,
            waited: Duration::from_secs(10),
        };
        let text = e.to_string();
        assert!(
            text.contains("shard(s) 2, 3 for 10.0 s in frame 17 (process 1 at 127.0.0.1:7701)"),
            "{text}"
        );
        assert!(text.contains("peer timeout"), "{text}");
    }
}
