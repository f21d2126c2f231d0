//! Sending messages: [`Output::send`], [`Output::send_to`] and the typed [`Sender`].

use std::any::TypeId;

use super::Output;
use crate::entity::Entity;
use crate::erased::Erased;
use crate::message::{Message, MsgBuf};

impl Output<'_> {
    /// Sends message `m` of type `M`: every system reads it in the next frame, through
    /// [`World::messages`](crate::World::messages), after the messages of the systems
    /// registered before this one and of this system's earlier sends.
    ///
    /// ```
    /// # use runsync::prelude::*;
    /// #[derive(Debug, PartialEq)]
    /// struct Shout(&'static str);
    ///
    /// let mut world = World::new();
    /// world.register_message::<Shout>();
    /// let mut rt = Runtime::builder().workers(2).build(world);
    /// rt.add_system(|_: &World, out: &mut Output| out.send(Shout("a")));
    /// rt.add_system(|_: &World, out: &mut Output| {
    ///     out.send(Shout("b"));
    ///     out.send(Shout("c"));
    /// });
    /// rt.frame();
    /// assert_eq!(rt.world().messages::<Shout>(), [Shout("a"), Shout("b"), Shout("c")]);
    /// ```
    ///
    /// Cost: a type check against the last message type sent, a downcast and a
    /// `Vec::push`; in a hot loop, a [`sender`](Self::sender) is the push alone.
    ///
    /// # Panics
    /// If `M` is not registered with
    /// [`World::register_message`](crate::World::register_message).
    #[inline]
    #[track_caller]
    pub fn send<M: Message>(&mut self, m: M) {
        self.message_buf::<M>().broadcast.push(m);
    }

    /// Sends message `m` to entity `to`: read in the next frame with
    /// [`World::messages_for`](crate::World::messages_for)`(to)` (in system then emission
    /// order). If `to` is dead once this frame's structural commands are applied, the
    /// message is dropped and counted in [`FrameStats::dropped`](crate::FrameStats::dropped).
    ///
    /// # Panics
    /// If `M` is not registered.
    #[inline]
    #[track_caller]
    pub fn send_to<M: Message>(&mut self, to: Entity, m: M) {
        self.message_buf::<M>().addressed.push((to, m));
    }

    /// A sender for one message type, for hot loops: each [`Sender::send`] is a
    /// `Vec::push`.
    ///
    /// # Panics
    /// If `M` is not registered.
    #[inline]
    #[track_caller]
    pub fn sender<M: Message>(&mut self) -> Sender<'_, M> {
        Sender {
            buf: self.message_buf::<M>(),
        }
    }

    #[inline(always)]
    #[track_caller]
    fn message_buf<M: Message>(&mut self) -> &mut MsgBuf<M> {
        let i = if self.message.0 == TypeId::of::<M>() {
            self.message.1
        } else {
            self.remember_message::<M>()
        };
        match self.bufs.messages.get_mut(i) {
            Some(buf) => Erased::get_or_new::<MsgBuf<M>>(buf),
            None => unreachable!("made by `remember_message`"),
        }
    }

    /// Looks `M` up, makes room for its buffer, and remembers it as the last type sent.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn remember_message<M: Message>(&mut self) -> usize {
        let i = self.world.message_index::<M>();
        let bufs = &mut self.bufs.messages;
        if bufs.len() <= i {
            bufs.resize_with(i + 1, || None);
        }
        self.message = (TypeId::of::<M>(), i);
        i
    }
}

/// A typed sender for one message type; see [`Output::sender`].
pub struct Sender<'o, M> {
    buf: &'o mut MsgBuf<M>,
}

impl<M: Message> Sender<'_, M> {
    /// Sends `m`; see [`Output::send`].
    #[inline]
    pub fn send(&mut self, m: M) {
        self.buf.broadcast.push(m);
    }

    /// Sends `m` to `to`; see [`Output::send_to`].
    #[inline]
    pub fn send_to(&mut self, to: Entity, m: M) {
        self.buf.addressed.push((to, m));
    }
}
