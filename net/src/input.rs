//! What crosses the network and what systems read: the game's input type ([`NetInput`],
//! [`PodInput`] for `bytemuck` plain data) and every player's input of a frame
//! ([`PlayerInputs`]), which the session sets as the frame's [`Input`](runsync::Input)
//! resource before each frame it runs.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, SeqAccess, Visitor};
use serde::ser::SerializeTuple;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A game's input type: one player's input for one frame, the only game data that crosses
/// the network. Implemented for every type with the bounds below; derive them on a plain
/// struct of buttons and axes:
///
/// ```
/// #[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// struct Pad { left: bool, right: bool, fire: bool }
/// fn is_net_input<I: runsync_net::NetInput>() {}
/// is_net_input::<Pad>();
/// ```
///
/// What it must be:
/// - **plain data of one size**: ggrs sends every player's input of a packet as one byte
///   string and cuts it into equal parts, so every value must serialize (bincode, fixed
///   integers) to the same number of bytes: structs and arrays of numbers and `bool`s,
///   not `Vec`, `String`, `Option` or enums whose variants differ in size. A `bytemuck`
///   [`Pod`](bytemuck::Pod) type without serde goes in [`PodInput`].
/// - **`Default`** is "no input": what a player gives before their first input arrives
///   and after they disconnect.
/// - **`PartialEq`** decides a misprediction (a rollback): ggrs predicts that a remote
///   player repeats their last input, and rolls back when the real one differs. Quantize
///   analog values so that a held stick compares equal from frame to frame.
pub trait NetInput:
    Copy + PartialEq + Default + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

impl<T> NetInput for T where
    T: Copy + PartialEq + Default + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

/// A `bytemuck` plain-data input: `T` crosses the network as its
/// `size_of::<T>()` bytes (no serde derive needed), compares by its bytes, and defaults to
/// all zeroes. Systems read the value as `.0` (or through `Deref`).
///
/// ```
/// use runsync_net::{NetInput, PodInput};
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Stick { x: i16, y: i16, buttons: u32 }
/// fn is_net_input<I: NetInput>() {}
/// is_net_input::<PodInput<Stick>>();
/// let bytes = bincode::serialize(&PodInput(Stick { x: -1, y: 2, buttons: 5 })).unwrap();
/// assert_eq!(bytes.len(), 8, "the value's bytes, no length prefix");
/// ```
#[derive(Clone, Copy)]
pub struct PodInput<T: bytemuck::Pod>(pub T);

impl<T: bytemuck::Pod> Default for PodInput<T> {
    fn default() -> Self {
        PodInput(T::zeroed())
    }
}

impl<T: bytemuck::Pod> PartialEq for PodInput<T> {
    fn eq(&self, other: &Self) -> bool {
        bytemuck::bytes_of(&self.0) == bytemuck::bytes_of(&other.0)
    }
}

impl<T: bytemuck::Pod> fmt::Debug for PodInput<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PodInput(0x")?;
        for b in bytemuck::bytes_of(&self.0) {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

impl<T: bytemuck::Pod> std::ops::Deref for PodInput<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Serialized as a tuple of `size_of::<T>()` bytes: a fixed size, as ggrs needs.
impl<T: bytemuck::Pod> Serialize for PodInput<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let bytes = bytemuck::bytes_of(&self.0);
        let mut t = s.serialize_tuple(bytes.len())?;
        for b in bytes {
            t.serialize_element(b)?;
        }
        t.end()
    }
}

impl<'de, T: bytemuck::Pod> Deserialize<'de> for PodInput<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Bytes<T>(PhantomData<T>);
        impl<'de, T: bytemuck::Pod> Visitor<'de> for Bytes<T> {
            type Value = PodInput<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{} bytes", size_of::<T>())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut value = T::zeroed();
                for (i, b) in bytemuck::bytes_of_mut(&mut value).iter_mut().enumerate() {
                    *b = seq
                        .next_element()?
                        .ok_or_else(|| de::Error::invalid_length(i, &self))?;
                }
                Ok(PodInput(value))
            }
        }
        d.deserialize_tuple(size_of::<T>(), Bytes(PhantomData))
    }
}

/// Every player's input of the frame being run, with whether each player is still
/// connected: the value systems read with `world.input::<PlayerInputs<I>>()` (the session
/// sets it as the [`Input`](runsync::Input) resource before each frame, so it is part of
/// every snapshot, as runsync's inputs are).
///
/// A frame's inputs are the confirmed ones once every peer's have arrived; before that, a
/// remote player's is a prediction (their last input), and the frame is run again when
/// the prediction was wrong. Systems cannot tell the two apart, on purpose: a game that
/// behaved differently on a predicted input would end the re-run with a state the
/// confirmed run never has on the other peers. Only a disconnect is visible
/// ([`is_connected`](Self::is_connected)), and it is the same on every peer for the same
/// frame.
///
/// ```
/// use runsync::prelude::*;
/// use runsync_net::PlayerInputs;
///
/// let mut rt = Runtime::builder().workers(1).build(World::new());
/// rt.frame_with(PlayerInputs::new(vec![3u8, 4]));
/// let inputs = rt.world().input::<PlayerInputs<u8>>();
/// assert_eq!((inputs.get(0), inputs.get(1), inputs.len()), (3, 4, 2));
/// assert!(inputs.is_connected(1));
/// ```
#[derive(Debug, PartialEq, Eq, Default)]
pub struct PlayerInputs<I> {
    inputs: Vec<I>,
    connected: Vec<bool>,
}

impl<I: Copy> PlayerInputs<I> {
    /// The inputs of players `0..inputs.len()`, all connected.
    pub fn new(inputs: Vec<I>) -> Self {
        let connected = vec![true; inputs.len()];
        PlayerInputs { inputs, connected }
    }

    /// `players` players, each with input `I::default()`, connected.
    pub fn empty(players: usize) -> Self
    where
        I: Default,
    {
        Self::new(vec![I::default(); players])
    }

    /// Player `player`'s input (`I::default()` once they have disconnected).
    ///
    /// # Panics
    /// If `player >= self.len()`.
    #[track_caller]
    pub fn get(&self, player: usize) -> I {
        self.inputs[player]
    }

    /// Whether player `player` was connected in this frame; a disconnected player's input
    /// is `I::default()` from the frame after their last input on, on every peer (a game
    /// may hand them to an AI there).
    ///
    /// # Panics
    /// If `player >= self.len()`.
    #[track_caller]
    pub fn is_connected(&self, player: usize) -> bool {
        self.connected[player]
    }

    /// The number of players.
    pub fn len(&self) -> usize {
        self.inputs.len()
    }

    /// Whether there is no player.
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// Each player's number and input, in player order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (usize, I)> + '_ {
        self.inputs.iter().copied().enumerate()
    }

    /// Overwrites the inputs in place with a frame's as ggrs hands them over: a
    /// [disconnected](ggrs::InputStatus::Disconnected) player's input is `I::default()`
    /// and the player not connected.
    pub(crate) fn set_from_ggrs(&mut self, inputs: &[(I, ggrs::InputStatus)])
    where
        I: Default,
    {
        self.set(inputs.iter().map(|&(input, status)| match status {
            ggrs::InputStatus::Disconnected => (I::default(), false),
            ggrs::InputStatus::Confirmed | ggrs::InputStatus::Predicted => (input, true),
        }));
    }

    /// Overwrites the inputs in place (the session's path: no allocation once sized).
    pub(crate) fn set(&mut self, inputs: impl ExactSizeIterator<Item = (I, bool)>) {
        let n = inputs.len();
        self.inputs.clear();
        self.connected.clear();
        self.inputs.reserve(n);
        self.connected.reserve(n);
        for (input, connected) in inputs {
            self.inputs.push(input);
            self.connected.push(connected);
        }
    }
}

/// Each player's `(input, connected)` in player order: a sequence, so a recording can
/// never hold more inputs than connection flags or the reverse. This is how an online
/// match's replay stores its frames (`NetSessionBuilder::record_replay`), played back
/// with `Runtime::play_replay::<PlayerInputs<I>>`.
impl<I: Serialize + Copy> Serialize for PlayerInputs<I> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.inputs.iter().zip(&self.connected))
    }
}

impl<'de, I: Deserialize<'de> + Copy> Deserialize<'de> for PlayerInputs<I> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let players = Vec::<(I, bool)>::deserialize(d)?;
        let (inputs, connected) = players.into_iter().unzip();
        Ok(PlayerInputs { inputs, connected })
    }
}

/// Field by field, so that `clone_from` (what a snapshot into a reused ring does) keeps
/// the vectors' memory: a steady frame's snapshot of the inputs allocates nothing.
impl<I: Clone> Clone for PlayerInputs<I> {
    fn clone(&self) -> Self {
        PlayerInputs {
            inputs: self.inputs.clone(),
            connected: self.connected.clone(),
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.inputs.clone_from(&source.inputs);
        self.connected.clone_from(&source.connected);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
    #[repr(C)]
    struct Stick {
        x: i16,
        y: i16,
    }

    #[test]
    fn a_pod_input_round_trips_as_its_bytes_and_rejects_a_short_packet() {
        let v = PodInput(Stick { x: -3, y: 300 });
        let bytes = bincode::serialize(&v).unwrap();
        assert_eq!(bytes, bytemuck::bytes_of(&v.0));
        let back: PodInput<Stick> = bincode::deserialize(&bytes).unwrap();
        assert_eq!(back.0, v.0);
        assert!(bincode::deserialize::<PodInput<Stick>>(&bytes[..3]).is_err());
        assert_eq!(PodInput::<Stick>::default().0, Stick { x: 0, y: 0 });
        assert_eq!(format!("{v:?}"), "PodInput(0xfdff2c01)");
    }

    #[test]
    fn set_keeps_the_memory_and_clone_from_reuses_it() {
        let mut a = PlayerInputs::<u32>::empty(4);
        let ptr = a.inputs.as_ptr();
        a.set([(1, true), (2, false), (3, true), (4, true)].into_iter());
        assert_eq!(a.inputs.as_ptr(), ptr);
        assert_eq!((a.get(1), a.is_connected(1)), (2, false));
        let mut b = PlayerInputs::<u32>::empty(4);
        let ptr = b.inputs.as_ptr();
        b.clone_from(&a);
        assert_eq!(b, a);
        assert_eq!(b.inputs.as_ptr(), ptr);
    }

    #[test]
    fn player_inputs_round_trip_through_serde_as_pairs() {
        let mut a = PlayerInputs::<u16>::empty(3);
        a.set([(7, true), (0, false), (9, true)].into_iter());
        let bytes = bincode::serialize(&a).unwrap();
        assert_eq!(
            bincode::deserialize::<PlayerInputs<u16>>(&bytes).unwrap(),
            a
        );
        let pairs: Vec<(u16, bool)> = bincode::deserialize(&bytes).unwrap();
        assert_eq!(pairs, [(7, true), (0, false), (9, true)]);
    }
}
