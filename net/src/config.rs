//! The ggrs [`Config`](ggrs::Config) of a runsync game: its input type, its address type,
//! and the state ggrs keeps per saved frame (only the frame's number: the snapshot itself
//! lives in the [`Rollback`](crate::Rollback)'s ring, reused frame after frame).

use std::fmt::Debug;
use std::hash::Hash;
use std::marker::PhantomData;

use crate::input::NetInput;

/// What a peer's address must be: `SocketAddr` for [`UdpTransport`](crate::UdpTransport),
/// [`PeerId`](crate::PeerId) for the in-process [`MemoryNetwork`](crate::MemoryNetwork).
pub trait Address: Clone + PartialEq + Eq + Hash + Debug + Send + Sync + 'static {}

impl<A> Address for A where A: Clone + PartialEq + Eq + Hash + Debug + Send + Sync + 'static {}

/// ggrs's compile-time configuration for a game whose input is `I` and whose peers are
/// reached at addresses `A`. Remote inputs are predicted with
/// [`PredictRepeatLast`](ggrs::PredictRepeatLast) (a held button stays held), which suits
/// inputs that describe what is held rather than what was pressed (see ggrs's
/// `InputPredictor` docs).
///
/// The state ggrs stores per saved frame is that frame's number: the snapshot is in the
/// session's ring of [`RuntimeSnapshot`](runsync::RuntimeSnapshot)s, at the same place
/// ggrs's own ring would put it, and a load checks that the two agree.
pub struct NetConfig<I, A>(PhantomData<fn() -> (I, A)>);

impl<I: NetInput, A: Address> ggrs::Config for NetConfig<I, A> {
    type Input = I;
    type InputPredictor = ggrs::PredictRepeatLast;
    type State = ggrs::Frame;
    type Address = A;
}
