//! The exchange rounds between shards, each carrying every shard's status, so that a
//! failure anywhere ends every shard in the same round.
//!
//! # Protocol
//!
//! A run is a fixed sequence of rounds, the same on every shard: one to start (the
//! first mirrors), two per frame (the spawned ids, then the entities), one to end. A
//! round is a timely epoch: every shard sends its records for the round (each to the
//! shard it is for, through an `Exchange` on the target), then a *status* to every
//! shard — ok, or failed with the frame and the cause — and advances its input; the
//! round is over on a shard when timely's progress says no shard can send more in it.
//!
//! 1. **Send.** A shard whose step failed (an error or a panic, caught) sends its
//!    failure instead of its records: it still takes part in the round, to say so.
//! 2. **Wait**, at most the peer timeout: past it, the shards whose status did not come
//!    are named in a [`ClusterError::PeerTimeout`]. A worker that panics while stepping
//!    timely (a lost connection poisons its queues) returns
//!    [`ClusterError::PeerLost`], naming the process whose connection closed.
//! 3. **Check.** Every shard must have sent exactly one status for this round, and
//!    every record must be for this shard (real checks, not debug ones: a shard whose
//!    input closed without a word shows as a missing status). A failed status ends the
//!    run on every shard with [`ClusterError::Shard`] — the lowest failing shard's, so
//!    every shard reports the same one; the failing shard keeps its cause itself, the
//!    others get its text.
//!
//! After the last round (or a failure), a shard closes its input and steps until the
//! dataflow completes, at most the peer timeout (not at all once timely is broken
//! here), so that the others can complete theirs.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;
use std::time::{Duration, Instant};

use timely::communication::Allocator;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::operator::Operator;
use timely::dataflow::operators::{Input, Probe};
use timely::dataflow::{InputHandle, ProbeHandle};
use timely::worker::Worker;

use crate::error::ClusterError;
use crate::launch::{Peers, panic_message, quietly};

/// One record between shards: the shard it goes to, its kind and its bytes.
pub(crate) type Record = (u32, u8, Vec<u8>);

/// A shard's status for a round: sender, round, then ok (`0`) or failed (`1`, the
/// frame, the cause's text).
pub(crate) const STATUS: u8 = 5;

/// A step that failed on this shard: in which frame, and why.
pub(crate) struct Failed {
    /// The frame (0: while starting).
    pub(crate) frame: u64,
    /// Why.
    pub(crate) cause: ClusterError,
}

/// What a shard's step came to, for the next round.
pub(crate) type Status = Result<(), Box<Failed>>;

/// Runs one step of a shard, catching its panic: its status for the next round.
pub(crate) fn attempt(frame: u64, step: impl FnOnce() -> Result<(), ClusterError>) -> Status {
    match catch_unwind(AssertUnwindSafe(step)) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(cause)) => Err(Box::new(Failed { frame, cause })),
        Err(payload) => Err(Box::new(Failed {
            frame,
            cause: ClusterError::Panic {
                message: panic_message(&*payload),
            },
        })),
    }
}

/// A status record's bytes.
fn status_bytes(me: usize, round: u64, failed: Option<(u64, &str)>) -> Vec<u8> {
    let mut b = Vec::with_capacity(21);
    b.extend_from_slice(&(me as u32).to_le_bytes());
    b.extend_from_slice(&round.to_le_bytes());
    match failed {
        None => b.push(0),
        Some((frame, cause)) => {
            b.push(1);
            b.extend_from_slice(&frame.to_le_bytes());
            b.extend_from_slice(cause.as_bytes());
        }
    }
    b
}

/// A status record read: `(sender, round, None | Some((frame, cause)))`; `None` if
/// malformed.
type Told = (usize, u64, Option<(u64, String)>);

fn read_status(b: &[u8]) -> Option<Told> {
    let sender = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
    let round = u64::from_le_bytes(b.get(4..12)?.try_into().ok()?);
    match *b.get(12)? {
        0 if b.len() == 13 => Some((sender, round, None)),
        1 => {
            let frame = u64::from_le_bytes(b.get(13..21)?.try_into().ok()?);
            let cause = String::from_utf8_lossy(&b[21..]).into_owned();
            Some((sender, round, Some((frame, cause))))
        }
        _ => None,
    }
}

/// Checks one round's statuses (all of them received by shard `me` of `shards`) and
/// the other records' targets. `own`: this shard's status, given back as the cause when
/// it is the lowest that failed.
fn judge(
    me: usize,
    shards: usize,
    round: u64,
    frame: u64,
    statuses: &[(u32, Vec<u8>)],
    misdirected: usize,
    own: Status,
) -> Result<(), ClusterError> {
    let mut told: Vec<Option<Option<(u64, String)>>> = vec![None; shards];
    let mut problems = Vec::new();
    for (to, bytes) in statuses {
        match read_status(bytes) {
            Some((s, r, status)) if s < shards && r == round && *to as usize == me => {
                if told[s].replace(status).is_some() {
                    problems.push(format!("shard {s} sent two statuses in round {round}"));
                }
            }
            Some((s, r, _)) => problems.push(format!(
                "a status from shard {s} for round {r}, to shard {to}, came in round {round} \
                 to shard {me}"
            )),
            None => problems.push(format!("a malformed status in round {round}")),
        }
    }
    if let Some((s, (f, cause))) =
        (told.iter().enumerate()).find_map(|(s, t)| t.clone().flatten().map(|failed| (s, failed)))
    {
        return Err(ClusterError::Shard {
            shard: s,
            frame: f,
            cause: Box::new(match own {
                Err(own) if s == me => own.cause,
                _ => ClusterError::Remote { message: cause },
            }),
        });
    }
    if let Err(own) = own {
        // This shard failed, but its status did not come back to it.
        return Err(ClusterError::Shard {
            shard: me,
            frame: own.frame,
            cause: Box::new(own.cause),
        });
    }
    if misdirected > 0 {
        problems.push(format!(
            "{misdirected} record(s) for other shards came to shard {me} in round {round}"
        ));
    }
    let missing: Vec<usize> = (0..shards).filter(|&s| told[s].is_none()).collect();
    if let Some(&first) = missing.first() {
        return Err(ClusterError::Shard {
            shard: first,
            frame,
            cause: Box::new(ClusterError::Protocol {
                message: format!(
                    "no status from shard(s) {missing:?} in exchange round {round}: they \
                     stopped without a word (see their process's error)"
                ),
            }),
        });
    }
    if let Some(problem) = problems.into_iter().next() {
        return Err(ClusterError::Shard {
            shard: me,
            frame,
            cause: Box::new(ClusterError::Protocol { message: problem }),
        });
    }
    Ok(())
}

/// One shard's side of the exchange: its timely worker, the dataflow that delivers
/// records by their target, and the rounds (see the [module](self)).
pub(crate) struct Rounds<'w> {
    worker: &'w mut Worker<Allocator>,
    peers: &'w Peers,
    input: Option<InputHandle<u64, CapacityContainerBuilder<Vec<Record>>>>,
    probe: ProbeHandle<u64>,
    /// Records by the round (timely epoch) they were sent in: a shard that is ahead may
    /// deliver the next round's records while this one still waits.
    inbox: Rc<RefCell<Vec<(u64, Record)>>>,
    /// This shard.
    pub(crate) me: usize,
    /// The shards.
    pub(crate) shards: usize,
    timeout: Duration,
    /// Whether timely failed or stalled here (a lost or silent peer): it is not stepped
    /// again.
    broken: bool,
    /// The last round's records (statuses taken out).
    pub(crate) received: Vec<Record>,
}

impl<'w> Rounds<'w> {
    /// Builds the dataflow on `worker`.
    pub(crate) fn new(
        worker: &'w mut Worker<Allocator>,
        peers: &'w Peers,
        timeout: Duration,
    ) -> Self {
        let (me, shards) = (worker.index(), worker.peers());
        let inbox: Rc<RefCell<Vec<(u64, Record)>>> = Rc::default();
        let mut input = InputHandle::<u64, CapacityContainerBuilder<Vec<Record>>>::new();
        let probe = worker.dataflow::<u64, _, _>(|scope| {
            let inbox = Rc::clone(&inbox);
            scope
                .input_from(&mut input)
                .unary::<CapacityContainerBuilder<Vec<()>>, _, _, _>(
                    Exchange::new(|r: &Record| u64::from(r.0)),
                    "Deliver",
                    move |_, _| {
                        move |records, _| {
                            records.for_each(|time, data| {
                                let round = *time.time();
                                inbox
                                    .borrow_mut()
                                    .extend(data.drain(..).map(|r| (round, r)));
                            });
                        }
                    },
                )
                .probe()
                .0
        });
        Rounds {
            worker,
            peers,
            input: Some(input),
            probe,
            inbox,
            me,
            shards,
            timeout,
            broken: false,
            received: Vec::new(),
        }
    }

    /// One round (see the [module](self)): sends `out` (drained; dropped if this shard
    /// failed) and this shard's status, waits for every shard's, checks them. The
    /// round's records are then in [`received`](Self::received). Returns the time
    /// spent; `frame` is the frame this shard is in, for the errors.
    ///
    /// # Errors
    /// [`ClusterError::Shard`] if a shard failed (this one included) or broke the
    /// protocol, [`ClusterError::PeerTimeout`], [`ClusterError::PeerLost`] or
    /// [`ClusterError::Exchange`] if the round did not complete.
    pub(crate) fn round(
        &mut self,
        out: &mut Vec<Record>,
        frame: u64,
        status: Status,
    ) -> Result<Duration, ClusterError> {
        let start = Instant::now();
        if self.broken {
            return Err(self.lost(frame, "timely failed earlier".into()));
        }
        let input = self.input.as_mut().expect("rounds end with the run");
        let round = *input.time();
        let told = match &status {
            Ok(()) => status_bytes(self.me, round, None),
            Err(failed) => {
                out.clear();
                status_bytes(self.me, round, Some((failed.frame, &failed.cause.bare())))
            }
        };
        for s in 0..self.shards {
            out.push((s as u32, STATUS, told.clone()));
        }
        let sent = quietly(|| {
            for r in out.drain(..) {
                input.send(r);
            }
            input.advance_to(round + 1);
        });
        if let Err(message) = sent {
            return Err(self.lost(frame, message));
        }
        let deadline = Instant::now().checked_add(self.timeout);
        let next = round + 1;
        while self.probe.less_than(&next) {
            let wait = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(self.silent(round, frame));
                    }
                    Some(left)
                }
                None => None,
            };
            let worker = &mut *self.worker;
            if let Err(message) = quietly(|| worker.step_or_park(wait)) {
                return Err(self.lost(frame, message));
            }
        }
        // This round's records out, in arrival order; the next round's stay.
        let mut inbox = self.inbox.borrow_mut();
        let (now, later): (Vec<_>, Vec<_>) = inbox.drain(..).partition(|(t, _)| *t == round);
        *inbox = later;
        drop(inbox);
        let mut statuses = Vec::with_capacity(self.shards);
        let mut misdirected = 0;
        for (_, r) in now {
            if r.1 == STATUS {
                statuses.push((r.0, r.2));
            } else if r.0 as usize != self.me {
                misdirected += 1;
            } else {
                self.received.push(r);
            }
        }
        judge(
            self.me,
            self.shards,
            round,
            frame,
            &statuses,
            misdirected,
            status,
        )?;
        Ok(start.elapsed())
    }

    /// The error for a round that did not complete within the timeout: the shards not
    /// heard from in it — or, when every status came but not timely's word that the
    /// round is over, every shard of the other processes. timely is not stepped again.
    fn silent(&mut self, round: u64, frame: u64) -> ClusterError {
        self.broken = true;
        let heard: Vec<usize> = (self.inbox.borrow().iter())
            .filter(|(t, r)| *t == round && r.1 == STATUS)
            .filter_map(|(_, r)| read_status(&r.2).map(|(s, _, _)| s))
            .collect();
        let mut shards: Vec<usize> = (0..self.shards)
            .filter(|s| *s != self.me && !heard.contains(s))
            .collect();
        if shards.is_empty() {
            let here = self.peers.shards_of(self.peers.process);
            shards = (0..self.shards)
                .filter(|s| *s != self.me && (self.peers.addresses.is_empty() || !here.contains(s)))
                .collect();
        }
        let mut processes: Vec<(usize, String)> = Vec::new();
        for &s in &shards {
            let p = self.peers.process_of(s);
            if p != self.peers.process && !processes.iter().any(|(q, _)| *q == p) {
                let address = self.peers.addresses.get(p).cloned().unwrap_or_default();
                processes.push((p, address));
            }
        }
        ClusterError::PeerTimeout {
            shards,
            processes,
            frame,
            waited: self.timeout,
        }
    }

    /// The error for timely failing while this shard stepped it (`message`: its panic):
    /// the process whose connection closed, if one did.
    fn lost(&mut self, frame: u64, message: String) -> ClusterError {
        self.broken = true;
        match self.peers.closed() {
            Some((p, cause)) => ClusterError::PeerLost {
                process: p,
                address: self.peers.addresses[p].clone(),
                shards: self.peers.shards_of(p),
                frame,
                cause,
            },
            None => ClusterError::Exchange {
                shard: self.me,
                frame,
                message,
            },
        }
    }
}

impl Drop for Rounds<'_> {
    /// Closes the input and steps until the dataflow completes (at most the timeout;
    /// not if timely failed here), then drops what is left of it.
    fn drop(&mut self) {
        drop(self.input.take());
        if !self.broken {
            let deadline = Instant::now().checked_add(self.timeout);
            while self.worker.has_dataflows() {
                let wait = match deadline {
                    Some(d) if Instant::now() >= d => break,
                    Some(d) => Some(d.saturating_duration_since(Instant::now())),
                    None => None,
                };
                let worker = &mut *self.worker;
                if quietly(|| worker.step_or_park(wait)).is_err() {
                    break;
                }
            }
        }
        let worker = &mut *self.worker;
        let _ = quietly(|| {
            for id in worker.installed_dataflows() {
                worker.drop_dataflow(id);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: usize, round: u64) -> (u32, Vec<u8>) {
        (0, status_bytes(s, round, None))
    }

    #[test]
    fn statuses_round_trip() {
        assert_eq!(read_status(&status_bytes(3, 9, None)), Some((3, 9, None)));
        assert_eq!(
            read_status(&status_bytes(1, 4, Some((5, "boom")))),
            Some((1, 4, Some((5, "boom".into()))))
        );
        assert_eq!(read_status(&[1, 2, 3]), None);
        assert_eq!(read_status(&status_bytes(3, 9, None)[..12]), None);
    }

    #[test]
    fn a_complete_round_of_oks_passes() {
        assert!(judge(0, 3, 4, 2, &[ok(2, 4), ok(0, 4), ok(1, 4)], 0, Ok(())).is_ok());
    }

    #[test]
    fn the_lowest_failure_wins_and_the_failing_shard_keeps_its_cause() {
        let failed =
            |s: usize, frame: u64, cause: &str| (0, status_bytes(s, 4, Some((frame, cause))));
        let statuses = [failed(2, 7, "two"), ok(0, 4), failed(1, 7, "one")];
        // Seen from shard 0: shard 1's text.
        match judge(0, 3, 4, 7, &statuses, 0, Ok(())) {
            Err(ClusterError::Shard {
                shard: 1,
                frame: 7,
                cause,
            }) => {
                assert!(matches!(*cause, ClusterError::Remote { ref message } if message == "one"));
            }
            other => panic!("{other:?}"),
        }
        // Seen from shard 1, which failed: its own cause.
        let own = Err(Box::new(Failed {
            frame: 7,
            cause: ClusterError::Panic {
                message: "one".into(),
            },
        }));
        let statuses: Vec<_> = statuses.iter().map(|(_, b)| (1, b.clone())).collect();
        match judge(1, 3, 4, 7, &statuses, 0, own) {
            Err(ClusterError::Shard {
                shard: 1,
                frame: 7,
                cause,
            }) => {
                assert!(matches!(*cause, ClusterError::Panic { .. }));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_missing_duplicate_or_stale_status_is_an_error_in_any_build() {
        let missing = judge(0, 3, 4, 2, &[ok(0, 4), ok(2, 4)], 0, Ok(()));
        assert!(
            matches!(&missing, Err(ClusterError::Shard { shard: 1, frame: 2, cause }) if matches!(**cause, ClusterError::Protocol { .. })),
            "{missing:?}"
        );
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("no status from shard(s) [1]")
        );
        let twice = judge(0, 2, 4, 2, &[ok(0, 4), ok(1, 4), ok(1, 4)], 0, Ok(()));
        assert!(twice.unwrap_err().to_string().contains("two statuses"));
        let stale = judge(0, 2, 4, 2, &[ok(0, 4), ok(1, 3)], 0, Ok(()));
        assert!(stale.is_err());
        let astray = judge(0, 2, 4, 2, &[ok(0, 4), ok(1, 4)], 2, Ok(()));
        assert!(astray.unwrap_err().to_string().contains("for other shards"));
    }
}
