//! The replay file: [`Replay`] (read and written here, in the layout below), the
//! `Recorder` that fills one as a runtime runs, and what playing one reports
//! ([`ReplayReport`], [`Divergence`], [`ReplayError`]). It knows no `Runtime`: the
//! runtime's recording and playing (`runtime/replay/mod.rs`) build on it, and the layer
//! list places it below them, beside `provenance`.
//!
//! File layout (little-endian), in sections each followed by its integrity check (length
//! and CRC-32C, as in a save: see `src/savefile/`): magic `RSYNPLAY`, version, the input
//! type's name and the start save (a section); the frame count, per frame the input
//! (present byte, length-prefixed postcard bytes), the checksum and (version 9, a replay
//! with edits) the edits made before it (`world::edit` has their layout), then the
//! keyframe count (a section); then each keyframe (the frame count it follows, a save), a
//! section each. [`Replay::read`] checks every section, so a damaged keyframe is refused when the
//! file is read ([`LoadError::Corrupt`] naming it), not when a divergence needs it. A
//! keyframe that is sound but contradicts the checksum recorded for its own frame (a file
//! written that way) is found when played: [`ReplayError::Contradiction`].

use std::fmt;

use crate::checksum::{Desync, Version};
use crate::provenance::Provenance;
use crate::resource::Resources;
use crate::savefile::{
    EDITS_REPLAY_VERSION, LoadError, PACKED_EDITS_REPLAY_VERSION, PACKED_REPLAY_VERSION, Put,
    REPLAY_VERSION, Reader, SaveError, VERSION, seal,
};
use crate::stats::FrameError;
use crate::world::edit::{Edit, read_edits, write_edits};

/// The first bytes of a replay.
pub(crate) const REPLAY_MAGIC: [u8; 8] = *b"RSYNPLAY";

/// One frame of a replay: its input (postcard bytes; `None` if no input was set), the
/// edits made between the frame before and it (applied after its input is set, before
/// it runs), and the world's checksum after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReplayFrame {
    pub(crate) input: Option<Vec<u8>>,
    pub(crate) edits: Vec<Edit>,
    pub(crate) checksum: u64,
}

/// A recorded replay, read by [`Replay::read`] and run by
/// [`Runtime::play_replay`](crate::Runtime::play_replay); see the module docs of
/// `src/runtime/replay/file.rs` for the layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replay {
    pub(crate) input_type: String,
    pub(crate) start: Vec<u8>,
    pub(crate) frames: Vec<ReplayFrame>,
    /// `(frames run since the start, save)`, ascending.
    pub(crate) keyframes: Vec<(u64, Vec<u8>)>,
    /// The version of the world checksum its checksums are of: 3, or 2 or 1 for a file
    /// written before it ([`World::checksum_v2`](crate::World::checksum_v2),
    /// [`World::checksum_v1`](crate::World::checksum_v1)).
    pub(crate) digest: u32,
}

impl Replay {
    /// Reads a replay written by [`Runtime::finish_replay`](crate::Runtime::finish_replay).
    /// The framing and every section's integrity check (the start, the frames, each
    /// keyframe) are checked here; what the saves inside hold is checked when played.
    /// Every count and length is checked against the bytes left before anything is
    /// allocated by it.
    ///
    /// # Errors
    /// A [`LoadError`] for a file that is not a replay of a version this build reads, or
    /// is truncated, or whose lengths lie; [`LoadError::Corrupt`] for a section damaged
    /// after it was written.
    pub fn read(r: &mut impl std::io::Read) -> Result<Replay, LoadError> {
        let bytes = crate::savefile::read_all(r)?;
        let mut r = Reader::new(&bytes);
        let version = r.replay_header(&REPLAY_MAGIC)?;
        let input_type = r.name("the input type")?.to_owned();
        let start = r.bytes("the start save")?.to_vec();
        r.end_section(|| "the replay's header and start save".into())?;
        let with_edits = matches!(version, EDITS_REPLAY_VERSION | PACKED_EDITS_REPLAY_VERSION);
        // Each frame is at least a presence byte, an input length and a checksum (and an
        // edit count).
        let n = r.count(if with_edits { 25 } else { 17 }, "the frames")?;
        let mut frames = Vec::with_capacity(n);
        let mut presence = Vec::with_capacity(n);
        for _ in 0..n {
            presence.push(r.u8("a frame's input")?);
            let input = Some(r.bytes("a frame's input")?.to_vec());
            let checksum = r.u64("a frame's checksum")?;
            let edits = if with_edits {
                read_edits(&mut r)?
            } else {
                Vec::new()
            };
            frames.push(ReplayFrame {
                input,
                edits,
                checksum,
            });
        }
        // Each keyframe is at least its frame count and a save's length.
        let k = r.count(16, "the keyframes")?;
        r.end_section(|| "the frames".into())?;
        for (f, p) in frames.iter_mut().zip(presence) {
            match p {
                0 if f.input.as_ref().is_some_and(Vec::is_empty) => f.input = None,
                1 => {}
                p => {
                    return Err(LoadError::BadData {
                        what: format!("bad input presence byte {p}"),
                    });
                }
            }
        }
        let mut keyframes = Vec::with_capacity(k);
        for i in 0..k {
            let at = r.u64("a keyframe")?;
            let save = r.bytes("a keyframe")?.to_vec();
            r.end_section(|| format!("keyframe {} of {k}", i + 1))?;
            if at == 0 || at > n as u64 || keyframes.last().is_some_and(|&(l, _)| l >= at) {
                return Err(LoadError::BadData {
                    what: format!("keyframe after {at} frames: out of order or past the end"),
                });
            }
            keyframes.push((at, save));
        }
        r.finish()?;
        Ok(Replay {
            input_type,
            start,
            frames,
            keyframes,
            digest: match version {
                PACKED_REPLAY_VERSION | PACKED_EDITS_REPLAY_VERSION => 3,
                REPLAY_VERSION | EDITS_REPLAY_VERSION => 2,
                _ => 1,
            },
        })
    }

    /// An empty replay of input type `I` that starts from `start`, a runtime save
    /// ([`Runtime::save`](crate::Runtime::save)), for a recording assembled outside a
    /// running runtime: frame by frame with [`push_frame`](Self::push_frame), written
    /// with [`write`](Self::write). This is how a rollback session records only the
    /// frames that became final, in order, whatever it re-ran; a runtime that just runs
    /// frames records itself with [`Runtime::record_replay`](crate::Runtime::record_replay).
    /// Such a replay has no keyframes: a divergence is reported by frame, without the
    /// values that differ.
    ///
    /// ```
    /// use runsync::prelude::*;
    /// use runsync::Replay;
    /// let mut rt = Runtime::builder().workers(1).build(World::new());
    /// let mut start = Vec::new();
    /// rt.save(&mut start).unwrap();
    /// let mut replay = Replay::new::<u8>(start);
    /// for pad in [1u8, 2, 3] {
    ///     rt.frame_with(pad);
    ///     replay.push_frame(Some(&pad), rt.world().checksum()).unwrap();
    /// }
    /// let mut file = Vec::new();
    /// replay.write(&mut file).unwrap();
    /// let replay = Replay::read(&mut file.as_slice()).unwrap();
    /// let mut again = Runtime::builder().workers(2).build(World::new());
    /// assert!(again.play_replay::<u8>(&replay).unwrap().is_identical());
    /// ```
    pub fn new<I: 'static>(start: Vec<u8>) -> Replay {
        Replay {
            input_type: std::any::type_name::<I>().to_owned(),
            start,
            frames: Vec::new(),
            keyframes: Vec::new(),
            digest: Version::CURRENT.number() as u32,
        }
    }

    /// The version of [`World::checksum`](crate::World::checksum)'s definition its
    /// recorded checksums are of: 3 for replays written by this runsync; 2 or 1 for those
    /// written before digest version 3 ([`World::checksum_v2`](crate::World::checksum_v2))
    /// or 2 ([`World::checksum_v1`](crate::World::checksum_v1)), which
    /// [`Runtime::play_replay`](crate::Runtime::play_replay) checks with that one.
    pub fn checksum_version(&self) -> u32 {
        self.digest
    }

    /// Appends a frame to a replay made with [`new`](Self::new): the input it ran with
    /// (`None`: no input was set) and the world's [checksum](crate::World::checksum)
    /// after it.
    ///
    /// # Errors
    /// [`SaveError::Encode`] if `I` is not the replay's input type or its `Serialize`
    /// fails.
    pub fn push_frame<I: serde::Serialize + 'static>(
        &mut self,
        input: Option<&I>,
        checksum: u64,
    ) -> Result<(), SaveError> {
        let input_type = std::any::type_name::<I>();
        if input_type != self.input_type {
            return Err(SaveError::Encode {
                type_name: "the input",
                message: format!(
                    "the replay records inputs of type {}, not {input_type}",
                    self.input_type
                ),
            });
        }
        let input = match input {
            None => None,
            Some(i) => {
                let mut bytes = Vec::new();
                crate::savefile::encode_values(std::slice::from_ref(i), &mut bytes).map_err(
                    |message| SaveError::Encode {
                        type_name: "the input",
                        message,
                    },
                )?;
                Some(bytes)
            }
        };
        self.frames.push(ReplayFrame {
            input,
            edits: Vec::new(),
            checksum,
        });
        Ok(())
    }

    /// Writes the replay, in the layout [`read`](Self::read) reads.
    ///
    /// # Errors
    /// [`SaveError::Io`] if writing fails.
    pub fn write(&self, w: &mut impl std::io::Write) -> Result<(), SaveError> {
        let mut out = Vec::with_capacity(self.start.len() + 32 * self.frames.len());
        out.extend_from_slice(&REPLAY_MAGIC);
        // A replay read from an older file keeps its version: its checksums are of
        // digest version 2 or 1 (and with 1 it has no edits). One without edits is
        // written as before edits existed.
        let with_edits = self.frames.iter().any(|f| !f.edits.is_empty());
        out.put_u32(match (self.digest, with_edits) {
            (3, true) => PACKED_EDITS_REPLAY_VERSION,
            (3, false) => PACKED_REPLAY_VERSION,
            (2, true) => EDITS_REPLAY_VERSION,
            (2, false) => REPLAY_VERSION,
            _ => VERSION,
        });
        out.put_bytes(self.input_type.as_bytes());
        out.put_bytes(&self.start);
        seal(&mut out, 0);
        let from = out.len();
        out.put_u64(self.frames.len() as u64);
        for f in &self.frames {
            out.put_u8(u8::from(f.input.is_some()));
            out.put_bytes(f.input.as_deref().unwrap_or_default());
            out.put_u64(f.checksum);
            if with_edits {
                write_edits(&f.edits, &mut out);
            }
        }
        out.put_u64(self.keyframes.len() as u64);
        seal(&mut out, from);
        for (at, save) in &self.keyframes {
            let from = out.len();
            out.put_u64(*at);
            out.put_bytes(save);
            seal(&mut out, from);
        }
        w.write_all(&out)?;
        Ok(())
    }

    /// Number of recorded frames.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether no frame was recorded.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// The runtime save the replay starts from, as [`Runtime::save`](crate::Runtime::save)
    /// writes it: load it ([`Runtime::load`](crate::Runtime::load),
    /// [`World::load`](crate::World::load)) to look at the state before the first frame —
    /// a configuration resource saved with it, say — without playing the replay.
    pub fn start_save(&self) -> &[u8] {
        &self.start
    }

    /// The name of the input type the replay was recorded with.
    pub fn input_type(&self) -> &str {
        &self.input_type
    }

    /// The recorded checksum after frame `i` of the replay (from 0), if recorded.
    pub fn checksum(&self, i: usize) -> Option<u64> {
        self.frames.get(i).map(|f| f.checksum)
    }

    /// The edits made right before frame `i` of the replay (from 0), as
    /// [`Runtime::edit`](crate::Runtime::edit) recorded them (empty if none, or past
    /// the end).
    pub fn edits(&self, i: usize) -> &[Edit] {
        self.frames.get(i).map_or(&[], |f| &f.edits)
    }
}

/// Encodes the current input of one type from the resources (`false`: none set).
pub(crate) type EncodeInput = fn(&Resources, &mut Vec<u8>) -> Result<bool, String>;

/// A replay being recorded by a runtime.
pub(crate) struct Recorder {
    pub(crate) replay: Replay,
    pub(crate) encode: EncodeInput,
    /// A keyframe every this many frames (0: none).
    pub(crate) keyframe_every: u64,
    /// The input of the frame running now, encoded when it started.
    pub(crate) pending: Option<Vec<u8>>,
    /// The edits made since the last recorded frame, for the next one.
    pub(crate) edits: Vec<Edit>,
    /// The first error (a keyframe that could not be saved), reported by `finish`.
    pub(crate) error: Option<SaveError>,
}

/// What [`Runtime::play_replay`](crate::Runtime::play_replay) found.
#[derive(Clone, Debug)]
pub struct ReplayReport {
    /// Frames replayed (all of them, or up to and including the first divergence).
    pub frames: u64,
    /// The first frame whose checksum differed, if one did.
    pub divergence: Option<Divergence>,
}

impl ReplayReport {
    /// Whether every frame gave its recorded checksum.
    pub fn is_identical(&self) -> bool {
        self.divergence.is_none()
    }
}

/// The first frame of a replay whose checksum differed from the recording, and what
/// differed; part of a [`ReplayReport`]. `Display` prints all of it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Divergence {
    /// The frame after which the checksums differ: its number (frames count from 1), as
    /// [`FrameStats::frame`](crate::FrameStats::frame) and
    /// [`Provenance::frame`](crate::Provenance::frame) give it (systems read
    /// [`Time::frame`](crate::Time::frame) = `frame - 1` during it).
    pub frame: u64,
    /// The recorded checksum after it.
    pub recorded: u64,
    /// The replayed one.
    pub replayed: u64,
    /// The frame count at which the states were compared (the first keyframe after the
    /// divergence: `frame` itself with a keyframe every frame); `None` if the replay has
    /// no keyframe after it, so no value could be compared.
    pub compared_at: Option<u64>,
    /// The first difference there: `left` is the recorded state, `right` the replayed.
    pub difference: Option<Desync>,
    /// The provenance of that entity in the diverging frame, re-run with it watched: the
    /// systems and outputs that produced the replayed value, or the system that spawned
    /// or despawned it. If nothing targeted it in that frame (an entity spawned or
    /// despawned in a later frame, before the states were compared), the first frame up
    /// to [`compared_at`](Self::compared_at) that did ([`Provenance::frame`] says which).
    pub provenance: Option<Provenance>,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "replay diverged at frame {}: checksum {:016x} recorded, {:016x} replayed",
            self.frame, self.recorded, self.replayed
        )?;
        match (&self.compared_at, &self.difference) {
            (Some(at), Some(d)) => writeln!(
                f,
                "first difference after {at} frames (recorded vs replayed): {d}"
            )?,
            (Some(at), None) => writeln!(
                f,
                "the keyframe after {at} frames shows no difference, and has the checksum \
                 recorded for it: the replay was back in step by then (is the checksum \
                 recorded for frame {} wrong?)",
                self.frame
            )?,
            (None, _) => writeln!(
                f,
                "no keyframe after this frame: record with keyframes \
                 (`record_replay_keyframes`) to see the values"
            )?,
        }
        if let Some(p) = &self.provenance {
            let frame = p.frame().unwrap_or(self.frame);
            write!(
                f,
                "who wrote, spawned or despawned it in frame {frame} (replayed):\n{p}"
            )?;
        }
        Ok(())
    }
}

/// Why a replay could not be played to its end.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReplayError {
    /// The replay was recorded with another input type.
    InputType {
        /// The replay's.
        recorded: String,
        /// The one asked for.
        expected: &'static str,
    },
    /// A save inside the replay (the start, or a keyframe) does not load into this
    /// runtime, or a frame's input does not decode.
    Load(LoadError),
    /// An edit recorded before a frame does not apply (a file written wrong, or damaged
    /// and sealed again); nothing of that edit was applied.
    Edit {
        /// The number of the frame it precedes (from 1).
        frame: u64,
        /// Why.
        error: LoadError,
    },
    /// A replayed frame failed.
    Frame {
        /// The frame's number (from 1, as in [`FrameStats::frame`](crate::FrameStats::frame)).
        frame: u64,
        /// Why.
        error: FrameError,
    },
    /// The replay contradicts itself, so the file is corrupt (written wrong, or edited
    /// with its integrity checks made again): the keyframe saved after frame `frame`
    /// holds a state whose checksum is not the one recorded for that frame. Found when a
    /// divergence is compared at that keyframe.
    Contradiction {
        /// The frame (from 1, as in [`Divergence::frame`]) whose keyframe it is.
        frame: u64,
        /// The checksum recorded for that frame.
        recorded: u64,
        /// The checksum of the state its keyframe holds.
        keyframe: u64,
    },
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::InputType { recorded, expected } => write!(
                f,
                "runsync: the replay's input type is `{recorded}`, not `{expected}`: play it \
                 with the input type it was recorded with"
            ),
            ReplayError::Load(e) => write!(f, "{e}"),
            ReplayError::Frame { frame, error } => {
                write!(f, "runsync: replayed frame {frame} failed: {error}")
            }
            ReplayError::Edit { frame, error } => write!(
                f,
                "runsync: an edit recorded before frame {frame} does not apply: {error}"
            ),
            ReplayError::Contradiction {
                frame,
                recorded,
                keyframe,
            } => write!(
                f,
                "runsync: the replay file is corrupt: it contradicts itself: the checksum \
                 recorded for frame {frame} is {recorded:016x}, but the keyframe saved after \
                 that frame holds a state whose checksum is {keyframe:016x}"
            ),
        }
    }
}

impl std::error::Error for ReplayError {}

impl From<LoadError> for ReplayError {
    fn from(e: LoadError) -> Self {
        ReplayError::Load(e)
    }
}
