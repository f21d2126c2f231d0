//! ggrs's packets over a non-blocking UDP socket bound where the caller says.

use std::io::ErrorKind;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};

use ggrs::{Message, NonBlockingSocket};

use super::{Codec, MAX_PACKET, SessionKey, TransportProbe};

/// ggrs's [`NonBlockingSocket`](ggrs::NonBlockingSocket) over UDP. Unlike ggrs's
/// `UdpNonBlockingSocket` it binds the address given (`127.0.0.1:0` for a test on
/// loopback, where ggrs's binds every interface), says which port it got
/// ([`local_addr`](Self::local_addr)), drops corrupted datagrams (a CRC-32C after each
/// message, see the crate's [wire format](crate#wire-format)), with a
/// [`SessionKey`] drops every datagram not sealed under it
/// ([`with_key`](Self::with_key)), and counts what it throws away
/// ([`probe`](Self::probe)).
///
/// ```
/// use runsync_net::UdpTransport;
/// let socket = UdpTransport::bind("127.0.0.1:0").unwrap();
/// let port = socket.local_addr().unwrap().port();
/// assert_ne!(port, 0);
/// ```
#[derive(Debug)]
pub struct UdpTransport {
    socket: UdpSocket,
    buffer: Box<[u8; MAX_PACKET]>,
    codec: Codec<SocketAddr>,
    probe: TransportProbe,
}

impl UdpTransport {
    /// Binds a non-blocking UDP socket to `addr`.
    ///
    /// # Errors
    /// As [`UdpSocket::bind`] and [`UdpSocket::set_nonblocking`].
    pub fn bind(addr: impl ToSocketAddrs) -> std::io::Result<Self> {
        let socket = UdpSocket::bind(addr)?;
        socket.set_nonblocking(true)?;
        Ok(UdpTransport {
            socket,
            buffer: Box::new([0; MAX_PACKET]),
            codec: Codec::new(),
            probe: TransportProbe::default(),
        })
    }

    /// Seals every datagram sent under `key`, and drops every one received that is not
    /// sealed under it (counted as
    /// [`unauthenticated`](crate::TransportStats::unauthenticated)) or was received
    /// before ([`replayed`](crate::TransportStats::replayed)). Every peer of the match
    /// must use the same key.
    pub fn with_key(mut self, key: SessionKey) -> Self {
        self.codec = Codec::keyed(key);
        self
    }

    /// The address the socket is bound to (with the port the system chose for port 0).
    ///
    /// # Errors
    /// As [`UdpSocket::local_addr`].
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// The socket's counters, readable after it is handed to a session.
    pub fn probe(&self) -> TransportProbe {
        self.probe.clone()
    }
}

impl NonBlockingSocket<SocketAddr> for UdpTransport {
    fn send_to(&mut self, msg: &Message, addr: &SocketAddr) {
        let bytes = self.codec.seal(msg);
        self.probe.sent(bytes.len());
        // A datagram that cannot be sent now (a full buffer, an unreachable peer) is a
        // lost packet: ggrs resends what matters.
        let _ = self.socket.send_to(&bytes, addr);
    }

    fn receive_all_messages(&mut self) -> Vec<(SocketAddr, Message)> {
        let mut received = Vec::new();
        loop {
            match self.socket.recv_from(&mut self.buffer[..]) {
                Ok((n, from)) => match self.codec.open(&from, &self.buffer[..n]) {
                    Ok(msg) => {
                        self.probe.received();
                        received.push((from, msg));
                    }
                    Err(why) => self.probe.dropped(why),
                },
                Err(e) if e.kind() == ErrorKind::WouldBlock => return received,
                // On some systems an earlier send to a closed port reports here.
                Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
                // Anything else: stop for this poll, as no packet is waiting we can read.
                Err(_) => return received,
            }
        }
    }
}
