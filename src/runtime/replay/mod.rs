//! Replays: a runtime save, then each frame's input and the checksum after it (plus, at a
//! chosen interval, a save of the whole state: a *keyframe*). [`Runtime::record_replay`]
//! records one, [`Runtime::finish_replay`] writes it, [`Replay::read`] reads it back and
//! [`Runtime::play_replay`] runs it, checking every frame.
//!
//! When a frame's checksum differs, the replayer finds *what* differs by loading the
//! first keyframe after that frame beside the replayed world and asking
//! [`World::first_difference`](crate::World::first_difference) — the entity, the component
//! and both values; for a structural difference (an entity spawned or despawned on one
//! side only, even one gone again by then), the first entity that differs — then re-runs
//! the diverging frame from the last keyframe before it with that entity watched
//! ([`Runtime::watch`]), so the report names the systems and outputs that produced the
//! replayed value, or the system that spawned or despawned the entity. With a keyframe every frame the values are
//! those right after the diverging frame; with sparser keyframes, at the next keyframe.
//!
//! The file itself, its layout and the reports are in `file`.
//!
//! [`Runtime::record_replay`]: crate::Runtime::record_replay
//! [`Runtime::finish_replay`]: crate::Runtime::finish_replay
//! [`Runtime::play_replay`]: crate::Runtime::play_replay
//! [`Runtime::watch`]: crate::Runtime::watch

pub(crate) mod file;

use super::Runtime;
use crate::entity::Entity;
use crate::provenance::Provenance;
use crate::savefile::{LoadError, SaveError, SaveSource};
use crate::world::edit::Edit;
pub use file::{Divergence, Replay, ReplayError, ReplayReport};
use file::{Recorder, ReplayFrame};

impl Runtime {
    /// Starts recording a replay ([`Replay`]): a save of the runtime now, then, for every
    /// frame run, its input (the [`Input<I>`](crate::Input) resource as the frame starts,
    /// set by [`frame_with`](Self::frame_with) or [`advance_with`](Self::advance_with);
    /// or its absence) and the world's [`checksum`](crate::World::checksum) after it, with a
    /// keyframe (a save) every 60 frames; [`finish_replay`](Self::finish_replay) writes
    /// it. Use [`record_replay_keyframes`](Self::record_replay_keyframes) to choose the
    /// keyframe interval. Systems' own state is not saved: start recording where it is at
    /// its initial value (before the first frame), or keep it in the world. With several
    /// [stages](Self::add_stage) the start save and the keyframes hold which stage's Sync
    /// made each change mark and delivered each message (save format version 5), so a
    /// replay may start mid-run: played back by a runtime with the same stages, every
    /// system sees each change and message exactly once, as in the recorded run (see
    /// [`World::saving_message`](crate::World::saving_message)).
    ///
    /// Cost while recording: a checksum per frame, the input's encoding, and a save per
    /// keyframe. Nothing when not recording.
    ///
    /// # Errors
    /// As [`save`](Self::save): every type and written resource must be opted into saves.
    pub fn record_replay<I>(&mut self) -> Result<(), SaveError>
    where
        I: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    {
        self.record_replay_keyframes::<I>(60)
    }

    /// [`record_replay`](Self::record_replay) with a keyframe every `every` frames (0:
    /// none). Keyframes let [`play_replay`](Self::play_replay) show the values that
    /// differ: with `every == 1` they are those right after the diverging frame.
    ///
    /// # Errors
    /// As [`record_replay`](Self::record_replay).
    pub fn record_replay_keyframes<I>(&mut self, every: u64) -> Result<(), SaveError>
    where
        I: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
    {
        let mut start = Vec::new();
        self.write_save(&mut start)?;
        self.recorder = Some(Box::new(Recorder {
            replay: Replay {
                input_type: std::any::type_name::<I>().to_owned(),
                start,
                frames: Vec::new(),
                keyframes: Vec::new(),
                digest: crate::checksum::Version::CURRENT.number() as u32,
            },
            encode: |res, out| match res.get::<crate::input::Input<I>>() {
                None => Ok(false),
                Some(i) => {
                    crate::savefile::encode_values(std::slice::from_ref(&i.0), out).map(|()| true)
                }
            },
            keyframe_every: every,
            pending: None,
            edits: Vec::new(),
            error: None,
        }));
        Ok(())
    }

    /// Stops recording and writes the replay to `w` (read it with [`Replay::read`]).
    ///
    /// # Errors
    /// [`SaveError::NotRecording`] if no replay is being recorded; the first error of a
    /// keyframe or input that could not be encoded; [`SaveError::Io`].
    pub fn finish_replay(&mut self, w: &mut impl std::io::Write) -> Result<(), SaveError> {
        let rec = self.recorder.take().ok_or(SaveError::NotRecording)?;
        if let Some(e) = rec.error {
            return Err(e);
        }
        rec.replay.write(w)
    }

    /// Whether a replay is being recorded.
    pub fn is_recording(&self) -> bool {
        self.recorder.is_some()
    }

    /// Applies `edit` to the world now, between frames ([`World::apply_edit`]: on an
    /// error nothing changed), and, while a replay is being recorded, records it as part
    /// of the next frame that counts as done: [`play_replay`](Self::play_replay) applies
    /// it right before that frame runs (after setting its input), so the replay
    /// reproduces it. Returns the entity a spawn made. This is how a tool changes a
    /// running game without making its replay diverge; a change made through
    /// [`world_mut`](Self::world_mut) is not recorded. Costs what
    /// [`World::apply_edit`] costs, plus a clone of the edit while recording. Edits made
    /// after the last frame run are not in the file [`finish_replay`](Self::finish_replay)
    /// writes (no frame follows them).
    ///
    /// ```
    /// use runsync::prelude::*;
    /// use runsync::{Edit, Replay};
    /// #[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    /// #[component(output = i64, merge = merge::sum, save, checksum)]
    /// struct X(i64);
    /// impl std::ops::AddAssign<i64> for X { fn add_assign(&mut self, d: i64) { self.0 += d } }
    ///
    /// let game = || {
    ///     let mut world = World::new();
    ///     world.register_default::<X>();
    ///     let mut rt = Runtime::builder().workers(1).build(world);
    ///     rt.add_system_named("grow", |w: &World, out: &mut Output| {
    ///         for (e, (_,)) in w.query::<(&X,)>() { out.write::<X>(e, 1); }
    ///     });
    ///     rt
    /// };
    /// let mut rt = game();
    /// let e = rt.world_mut().spawn((X(0),));
    /// rt.record_replay::<()>().unwrap();
    /// rt.frame();
    /// let mut value = Vec::new();
    /// let id = rt.world().encode_component(&X(100), &mut value).unwrap();
    /// rt.edit(&Edit::Insert { entity: e, components: vec![(id, value)] }).unwrap();
    /// rt.frame();
    /// assert_eq!(rt.world().get::<X>(e), Some(&X(101)));
    /// let mut file = Vec::new();
    /// rt.finish_replay(&mut file).unwrap();
    ///
    /// let replay = Replay::read(&mut file.as_slice()).unwrap();
    /// let mut again = game();
    /// assert!(again.play_replay::<()>(&replay).unwrap().is_identical());
    /// assert_eq!(again.world().get::<X>(e), Some(&X(101)));
    /// ```
    ///
    /// # Errors
    /// As [`World::apply_edit`].
    ///
    /// [`World::apply_edit`]: crate::World::apply_edit
    pub fn edit(&mut self, edit: &Edit) -> Result<Option<Entity>, LoadError> {
        let made = self.world.apply_edit(edit)?;
        if let Some(rec) = &mut self.recorder {
            rec.edits.push(edit.clone());
        }
        Ok(made)
    }

    /// Before a recorded frame: its input.
    pub(in crate::runtime) fn record_input(&mut self) {
        let Some(rec) = &mut self.recorder else {
            return;
        };
        let mut bytes = Vec::new();
        rec.pending = match (rec.encode)(self.world.resources(), &mut bytes) {
            Ok(true) => Some(bytes),
            Ok(false) => None,
            Err(message) => {
                rec.error.get_or_insert(SaveError::Encode {
                    type_name: "the input",
                    message,
                });
                None
            }
        };
    }

    /// The world's checksum as a replay of digest version `digest` recorded it.
    fn checksum_of_version(&self, digest: u32) -> u64 {
        match digest {
            1 => self.world.checksum_v1(),
            2 => self.world.checksum_v2(),
            _ => self.checksum(),
        }
    }

    /// After a recorded frame that counts as done: its input, checksum and keyframe.
    pub(in crate::runtime) fn record_frame(&mut self) {
        if self.recorder.is_none() {
            return;
        }
        let checksum = self.checksum();
        let Some(rec) = &mut self.recorder else {
            return;
        };
        rec.replay.frames.push(ReplayFrame {
            input: rec.pending.take(),
            edits: std::mem::take(&mut rec.edits),
            checksum,
        });
        let n = rec.replay.frames.len() as u64;
        if rec.keyframe_every > 0 && n % rec.keyframe_every == 0 {
            let mut save = Vec::new();
            let result = self.write_save(&mut save);
            let rec = self.recorder.as_mut().expect("recording");
            match result {
                Ok(()) => rec.replay.keyframes.push((n, save)),
                Err(e) => {
                    rec.error.get_or_insert(e);
                }
            }
        }
    }

    /// Plays `replay` (recorded with input type `I`) in this runtime, which must have the
    /// same registrations and systems (at any worker count): loads its start, then runs
    /// every frame with its recorded input and compares the checksum after it with the
    /// recorded one. At the first mismatch it stops and reports the frame; with a keyframe
    /// after it, the first entity, component and values that differ (recorded vs
    /// replayed); and the provenance of that entity in the diverging frame, re-run from
    /// the keyframe before it with the entity watched (see `src/runtime/replay/mod.rs`).
    /// The runtime is left where the replay stopped (after a divergence: after the re-run
    /// frame).
    ///
    /// ```
    /// use runsync::prelude::*;
    /// use runsync::Replay;
    /// #[derive(Component, Checksum, Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    /// #[component(output = i64, merge = merge::sum, save, checksum, debug)]
    /// struct X(i64);
    /// impl std::ops::AddAssign<i64> for X { fn add_assign(&mut self, d: i64) { self.0 += d } }
    ///
    /// let game = |workers| {
    ///     let mut world = World::new();
    ///     world.register_default::<X>();
    ///     world.spawn_batch((0..10).map(|i| (X(i),)));
    ///     let mut rt = Runtime::builder().workers(workers).build(world);
    ///     rt.add_system_named("push", |w: &World, out: &mut Output| {
    ///         let pad = *w.input::<i64>();
    ///         for (e, (x,)) in w.query::<(&X,)>() { out.write::<X>(e, pad + x.0 % 3); }
    ///     });
    ///     rt
    /// };
    /// let mut rt = game(2);
    /// rt.record_replay_keyframes::<i64>(1).unwrap();
    /// for f in 0..20 { rt.frame_with(f as i64 - 7); }
    /// let mut file = Vec::new();
    /// rt.finish_replay(&mut file).unwrap();
    ///
    /// let replay = Replay::read(&mut file.as_slice()).unwrap();
    /// let report = game(1).play_replay::<i64>(&replay).unwrap();
    /// assert!(report.is_identical());
    /// assert_eq!(report.frames, 20);
    /// ```
    ///
    /// # Errors
    /// [`ReplayError::InputType`] for a replay of another input type,
    /// [`ReplayError::Load`] if a save in it does not load here (other registrations) or
    /// an input does not decode, [`ReplayError::Frame`] if a replayed frame fails.
    pub fn play_replay<I>(&mut self, replay: &Replay) -> Result<ReplayReport, ReplayError>
    where
        I: serde::Serialize + serde::de::DeserializeOwned + Clone + Send + Sync + 'static,
    {
        let expected = std::any::type_name::<I>();
        if replay.input_type != expected {
            return Err(ReplayError::InputType {
                recorded: replay.input_type.clone(),
                expected,
            });
        }
        self.load_bytes(&replay.start)?;
        let start = self.frame;
        for i in 0..replay.frames.len() {
            // The frame's number (from 1), as `stats().frame` and provenance give it.
            let frame = self.frame + 1;
            self.replay_frame::<I>(replay, i)?;
            let replayed = self.checksum_of_version(replay.digest);
            let recorded = replay.frames[i].checksum;
            if replayed == recorded {
                continue;
            }
            let mut d = Divergence {
                frame,
                recorded,
                replayed,
                compared_at: None,
                difference: None,
                provenance: None,
            };
            let after = replay.keyframes.iter().find(|(at, _)| *at > i as u64);
            if let Some((at, save)) = after {
                for g in i + 1..*at as usize {
                    self.replay_frame::<I>(replay, g)?;
                }
                let mut recorded_world = self.world.shadow();
                recorded_world.load(&mut save.as_slice())?;
                d.compared_at = Some(start + at);
                d.difference = recorded_world.first_difference(&self.world);
                // No difference: the keyframe holds the replayed state (the resources
                // compared included), so its checksum is a true one, and it must be the
                // one recorded for its frame.
                let recorded = replay.frames[*at as usize - 1].checksum;
                let keyframe = match replay.digest {
                    1 => recorded_world.checksum_v1(),
                    2 => recorded_world.checksum_v2(),
                    _ => recorded_world.checksum(),
                };
                if d.difference.is_none() && keyframe != recorded {
                    return Err(ReplayError::Contradiction {
                        frame: start + at,
                        recorded,
                        keyframe,
                    });
                }
            }
            if let Some(e) = d.difference.as_ref().and_then(|x| x.entity()) {
                let (from, save) = replay
                    .keyframes
                    .iter()
                    .rev()
                    .find(|(at, _)| *at <= i as u64)
                    .map_or((0, &replay.start[..]), |(at, s)| (*at as usize, &s[..]));
                self.load_bytes(save)?;
                for g in from..i {
                    self.replay_frame::<I>(replay, g)?;
                }
                let watched = self.provenance(e).is_some();
                self.watch(e);
                self.replay_frame::<I>(replay, i)?;
                // Nothing targeted it in the diverging frame (an entity spawned or
                // despawned later, before the states were compared): the first frame up
                // to there that did, so the report says who spawned or despawned it.
                let until = d.compared_at.map_or(i + 1, |at| (at - start) as usize);
                let mut g = i + 1;
                while self.provenance(e).is_some_and(Provenance::is_empty) && g < until {
                    self.replay_frame::<I>(replay, g)?;
                    g += 1;
                }
                d.provenance = self.provenance(e).cloned();
                if !watched {
                    self.unwatch(e);
                }
            }
            return Ok(ReplayReport {
                frames: i as u64 + 1,
                divergence: Some(d),
            });
        }
        Ok(ReplayReport {
            frames: replay.frames.len() as u64,
            divergence: None,
        })
    }

    /// Runs frame `i` of `replay` with its input and edits.
    fn replay_frame<I>(&mut self, replay: &Replay, i: usize) -> Result<(), ReplayError>
    where
        I: serde::de::DeserializeOwned + Clone + Send + Sync + 'static,
    {
        match &replay.frames[i].input {
            None => {
                self.world.remove_resource::<crate::input::Input<I>>();
            }
            Some(bytes) => {
                let mut v: Vec<I> = Vec::with_capacity(1);
                crate::savefile::decode_values(bytes, 1, &mut v).map_err(|message| {
                    LoadError::Decode {
                        type_name: std::any::type_name::<I>(),
                        table: None,
                        message,
                    }
                })?;
                self.world.set_input(v.pop().expect("one input decoded"));
            }
        }
        let frame = self.frame + 1;
        for edit in &replay.frames[i].edits {
            self.world
                .apply_edit(edit)
                .map_err(|error| ReplayError::Edit { frame, error })?;
        }
        self.try_frame()
            .map_err(|error| ReplayError::Frame { frame, error })
    }

    /// Loads a runtime save held in memory (all of it).
    fn load_bytes(&mut self, mut bytes: &[u8]) -> Result<(), LoadError> {
        let mut src = SaveSource::new(&mut bytes);
        self.read_save(&mut src)?;
        src.finish()
    }
}
