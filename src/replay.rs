//! Replays: a runtime save, then each frame's input and the checksum after it (plus, at a
//! chosen interval, a save of the whole state: a *keyframe*). [`Runtime::record_replay`]
//! records one, [`Runtime::finish_replay`] writes it, [`Replay::read`] reads it back and
//! [`Runtime::play_replay`] runs it, checking every frame.
//!
//! When a frame's checksum differs, the replayer finds *what* differs by loading the
//! first keyframe after that frame beside the replayed world and asking
//! [`World::first_difference`](crate::World::first_difference) — the entity, the component
//! and both values — then re-runs the diverging frame from the last keyframe before it
//! with that entity watched ([`Runtime::watch`]), so the report names the systems and
//! outputs that produced the replayed value. With a keyframe every frame the values are
//! those right after the diverging frame; with sparser keyframes, at the next keyframe.
//!
//! File layout (little-endian): magic `RSYNPLAY`, version, the input type's name, the
//! start save, the frame count, per frame the input (present byte, length-prefixed
//! postcard bytes) and the checksum, then the keyframes (the frame count they follow,
//! a save each).
//!
//! [`Runtime::record_replay`]: crate::Runtime::record_replay
//! [`Runtime::finish_replay`]: crate::Runtime::finish_replay
//! [`Runtime::play_replay`]: crate::Runtime::play_replay
//! [`Runtime::watch`]: crate::Runtime::watch

use std::fmt;

use crate::checksum::Desync;
use crate::provenance::Provenance;
use crate::resource::Resources;
use crate::savefile::{LoadError, Put, Reader, SaveError, VERSION};
use crate::stats::FrameError;

/// The first bytes of a replay.
pub(crate) const REPLAY_MAGIC: [u8; 8] = *b"RSYNPLAY";

/// One frame of a replay: its input (postcard bytes; `None` if no input was set) and
/// the world's checksum after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReplayFrame {
    pub(crate) input: Option<Vec<u8>>,
    pub(crate) checksum: u64,
}

/// A recorded replay, read by [`Replay::read`] and run by
/// [`Runtime::play_replay`](crate::Runtime::play_replay); see the module docs of
/// `src/replay.rs` for the layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replay {
    pub(crate) input_type: String,
    pub(crate) start: Vec<u8>,
    pub(crate) frames: Vec<ReplayFrame>,
    /// `(frames run since the start, save)`, ascending.
    pub(crate) keyframes: Vec<(u64, Vec<u8>)>,
}

impl Replay {
    /// Reads a replay written by [`Runtime::finish_replay`](crate::Runtime::finish_replay).
    /// Only the framing is checked here; the saves inside are checked when played.
    ///
    /// # Errors
    /// A [`LoadError`] for a file that is not a replay of this version, or is truncated,
    /// or whose lengths lie.
    pub fn read(r: &mut impl std::io::Read) -> Result<Replay, LoadError> {
        let bytes = crate::savefile::read_all(r)?;
        let mut r = Reader::new(&bytes);
        r.header(&REPLAY_MAGIC)?;
        let input_type = r.name("the input type")?.to_owned();
        let start = r.bytes("the start save")?.to_vec();
        let n = r.count(17, "the frames")?;
        let mut frames = Vec::with_capacity(n);
        for _ in 0..n {
            let present = r.u8("a frame's input")?;
            let bytes = r.bytes("a frame's input")?;
            let input = match present {
                0 => None,
                1 => Some(bytes.to_vec()),
                p => {
                    return Err(LoadError::BadData {
                        what: format!("bad input presence byte {p}"),
                    });
                }
            };
            frames.push(ReplayFrame {
                input,
                checksum: r.u64("a frame's checksum")?,
            });
        }
        let k = r.count(16, "the keyframes")?;
        let mut keyframes = Vec::with_capacity(k);
        for _ in 0..k {
            let at = r.u64("a keyframe")?;
            if at == 0 || at > n as u64 || keyframes.last().is_some_and(|&(l, _)| l >= at) {
                return Err(LoadError::BadData {
                    what: format!("keyframe after {at} frames: out of order or past the end"),
                });
            }
            keyframes.push((at, r.bytes("a keyframe")?.to_vec()));
        }
        r.finish()?;
        Ok(Replay {
            input_type,
            start,
            frames,
            keyframes,
        })
    }

    /// Writes the replay (see [`read`](Self::read)).
    pub(crate) fn write(&self, w: &mut impl std::io::Write) -> Result<(), SaveError> {
        let mut out = Vec::with_capacity(self.start.len() + 32 * self.frames.len());
        out.extend_from_slice(&REPLAY_MAGIC);
        out.put_u32(VERSION);
        out.put_bytes(self.input_type.as_bytes());
        out.put_bytes(&self.start);
        out.put_u64(self.frames.len() as u64);
        for f in &self.frames {
            out.put_u8(u8::from(f.input.is_some()));
            out.put_bytes(f.input.as_deref().unwrap_or_default());
            out.put_u64(f.checksum);
        }
        out.put_u64(self.keyframes.len() as u64);
        for (at, save) in &self.keyframes {
            out.put_u64(*at);
            out.put_bytes(save);
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
    /// systems and outputs that produced the replayed value.
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
                "the keyframe after {at} frames shows no difference in values (only in \
                 state a checksum sees through types not compared)"
            )?,
            (None, _) => writeln!(
                f,
                "no keyframe after this frame: record with keyframes \
                 (`record_replay_keyframes`) to see the values"
            )?,
        }
        if let Some(p) = &self.provenance {
            write!(f, "who wrote it in frame {} (replayed):\n{p}", self.frame)?;
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
    /// A replayed frame failed.
    Frame {
        /// The frame's number (from 1, as in [`FrameStats::frame`](crate::FrameStats::frame)).
        frame: u64,
        /// Why.
        error: FrameError,
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
        }
    }
}

impl std::error::Error for ReplayError {}

impl From<LoadError> for ReplayError {
    fn from(e: LoadError) -> Self {
        ReplayError::Load(e)
    }
}
