//! # Making a game rollback-ready
//!
//! Rollback runs a frame more than once: with predicted inputs first, then again from a
//! restored snapshot once the real inputs arrive. A game is rollback-ready when a re-run
//! always ends where the first run with the same inputs would have, on every peer. runsync
//! already makes a frame bit-identical at any worker count; what is left is the game's
//! part, in five rules.
//!
//! ## 1. Inputs only through `Input<I>`
//!
//! Everything a player does reaches the systems as that frame's [`PlayerInputs`], the
//! [`Input`](runsync::Input) resource the session sets before each frame (and which is
//! part of every snapshot, so a restore brings back the input of the restored frame).
//! Systems read it with `world.input::<PlayerInputs<Pad>>()`. A system that reads a
//! keyboard, a channel, a socket or a file reads *today's* value while re-running
//! *yesterday's* frame.
//!
//! The input type is plain data of one size ([`NetInput`]): a struct of `bool`s and
//! small integers with serde, or a `bytemuck` `Pod` in a [`PodInput`]. Keep it small and
//! describe what is *held* (ggrs predicts that a remote player holds the same input).
//!
//! ## 2. No wall clock, no unseeded randomness
//!
//! Time is the [`Time`](runsync::Time) resource (`dt`, the fixed step, and `frame`),
//! never `Instant::now()` or `SystemTime`. Random numbers come from a generator seeded
//! by the frame and the entity (as the arena's spawner does), or from one kept in a
//! resource that is opted into snapshots. `HashMap`'s default hasher is seeded per
//! process: never let a `HashMap`'s iteration order decide an output (use a `BTreeMap`,
//! a `Vec`, or a fixed hasher).
//!
//! ## 3. All game state in the snapshot
//!
//! A snapshot holds the entities, the components of every registered type, the resources
//! opted in and the delivered messages; a restore brings back exactly that. So:
//! - every component type is opted in: `world.snapshotting::<C>()`, or `snapshot` in
//!   `#[component(..)]`. A type that is not makes the session (and the sync test) fail
//!   to start, naming it and every other type left out ([`NetError::NotRollbackReady`]);
//! - a resource systems write (`register_resource`) is opted in with
//!   `snapshotting_resource` (also checked at start); so is any other resource whose
//!   value changes during the game. Resources never opted in (assets, configuration)
//!   are left alone by a restore, which is right only for what never changes;
//! - message types: `snapshotting_message`;
//! - **a system's own fields are not in the snapshot.** A counter in a closure, a cache
//!   in a `System` struct that outlives the frame, is not rolled back. Keep such state in
//!   a component or resource. (A scratch buffer cleared every frame is fine.)
//!
//! And no edits from outside: between ticks, the world belongs to the session. Build
//! the same starting world on every peer, then change it only through systems.
//!
//! ## 4. Everything in the checksum
//!
//! Peers compare checksums of confirmed frames to detect a desync, and the sync test
//! compares re-runs with first runs. A type opted out of the checksum could differ
//! unseen, so a session or sync test refuses a world whose
//! [`unchecksummed`](runsync::World::unchecksummed) list is not empty
//! ([`NetError::Unchecksummed`]), unless told to accept it. Opt in with
//! `world.checksumming::<C>()` or `checksum` in `#[component(..)]`
//! (`#[derive(Checksum)]` writes the fields in order, floats by their bits).
//!
//! ## 5. The same program on every peer
//!
//! runsync's frames are bit-identical at any worker count on one machine and build.
//! Across machines, peers must run the same build for the same target (floating point
//! is IEEE 754 everywhere Rust runs, but a different compiler may fuse or reorder float
//! operations differently; integers and fixed point are immune).
//!
//! ## Prove it in a test
//!
//! [`sync_test`](crate::sync_test()) runs the game, rolls back 7 frames after every frame,
//! runs them again and compares each checksum with the first run's. Here a system keeps
//! a counter in its closure (rule 3): the test finds the first frame whose re-run
//! differs, and says which entity and value:
//!
//! ```
//! use runsync::prelude::*;
//! use runsync_net::{NetError, PlayerInputs};
//!
//! #[derive(Component, Checksum, Clone, Copy, Debug, PartialEq)]
//! #[component(output = i32, merge = merge::sum, snapshot, checksum)]
//! struct Gold(i32);
//! impl std::ops::AddAssign<i32> for Gold { fn add_assign(&mut self, d: i32) { self.0 += d } }
//!
//! let game = |bug: bool| {
//!     let mut world = World::new();
//!     world.register_default::<Gold>();
//!     world.spawn((Gold(0),));
//!     let mut rt = Runtime::builder().workers(2).build(world);
//!     let mut bonus = 0; // state outside the snapshot: the bug
//!     rt.add_system(move |w: &World, out: &mut Output| {
//!         let inputs = w.input::<PlayerInputs<u8>>();
//!         bonus += 1;
//!         let extra = if bug { bonus % 3 } else { 0 };
//!         for (e, _) in w.query::<(&Gold,)>() {
//!             out.write::<Gold>(e, i32::from(inputs.get(0)) + extra);
//!         }
//!     });
//!     rt
//! };
//! let pad = |frame: u64, _player: usize| (frame % 4) as u8;
//! assert!(runsync_net::sync_test(|| game(false), 1, 60, pad).is_ok());
//! let err = runsync_net::sync_test(|| game(true), 1, 60, pad).unwrap_err();
//! let NetError::SyncTestMismatch { difference: Some(d), .. } = &err else { panic!("{err}") };
//! assert!(d.component().unwrap().ends_with("Gold"));
//! ```
//!
//! Then run two peers over a [`MemoryNetwork`](crate::MemoryNetwork) with latency and
//! loss, and compare their [`confirmed_frames`](crate::NetSession::confirmed_frames) (this
//! crate's `tests/two_peers.rs` does, for its `duel` game).
//!
//! ## What rollback costs
//!
//! Every frame saves a snapshot (`snapshot_into` a reused ring entry: a `memcpy` of the
//! columns, no allocation once the world's shape is steady) and a checksum; a rollback
//! of `n` frames is one restore and `n` re-run frames (each with its save). The crate's
//! `rollback` benchmark measures them on the arena; the README's numbers come from it.
//!
//! [`PlayerInputs`]: crate::PlayerInputs
//! [`NetInput`]: crate::NetInput
//! [`PodInput`]: crate::PodInput
//! [`NetError::NotRollbackReady`]: crate::NetError::NotRollbackReady
//! [`NetError::Unchecksummed`]: crate::NetError::Unchecksummed
