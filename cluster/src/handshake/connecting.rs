//! The connecting side of a start: connects to a process of lower index, retrying until
//! the connect timeout, proves the key, says hello and checks the answer.

use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::events::Event;
use super::key::{ACCEPTING, CONNECTING, Key, NONCE, nonce};
use super::wire::{
    BODY, CHALLENGE, HEAD, HELLO_WAIT, Head, Hello, OPEN, PROTOCOL, difference, head, read_by,
};
use crate::error::ClusterError;

/// How one attempt to connect to a process ended, short of success.
enum Attempt {
    /// The address answered, but not as a process of this run: the start ends.
    Refuse(ClusterError, Option<TcpStream>),
    /// The connection closed, broke or fell silent: try again (the reason, for the
    /// timeout's error).
    Again(String),
}

/// Connects to process `j` at `address`, retrying until `deadline`; proves the key, says
/// hello and checks the answer.
pub(super) fn connect_to(
    j: usize,
    address: &str,
    hello: &Hello,
    key: &Key,
    start: Instant,
    deadline: Instant,
    stop: &AtomicBool,
) -> Event {
    let unreachable = |error: String| ClusterError::Unreachable {
        process: j,
        address: address.to_owned(),
        waited: start.elapsed(),
        error,
    };
    let mut last = String::from("no attempt");
    loop {
        if stop.load(Ordering::Relaxed) {
            return Event::Refused;
        }
        let now = Instant::now();
        if now >= deadline {
            return Event::Failed(unreachable(last), None);
        }
        let attempt = (deadline - now).min(Duration::from_secs(1));
        match address.to_socket_addrs() {
            Ok(addrs) => {
                let addrs: Vec<SocketAddr> = addrs.collect();
                if addrs.is_empty() {
                    last = "the name resolves to no address".into();
                }
                let mut connected = None;
                for a in addrs {
                    match TcpStream::connect_timeout(&a, attempt) {
                        Ok(s) => {
                            connected = Some(s);
                            break;
                        }
                        Err(e) => last = e.to_string(),
                    }
                }
                if let Some(s) = connected {
                    match talk_to(j, address, s, hello, key, start, deadline) {
                        Ok(event) => return event,
                        Err(Attempt::Refuse(e, s)) => return Event::Failed(e, s),
                        Err(Attempt::Again(why)) => last = why,
                    }
                }
            }
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(
            Duration::from_millis(100).min(deadline.saturating_duration_since(Instant::now())),
        );
    }
}

/// The connecting side of steps 2 and 3 on a new connection to process `j`.
fn talk_to(
    j: usize,
    address: &str,
    mut s: TcpStream,
    hello: &Hello,
    key: &Key,
    start: Instant,
    deadline: Instant,
) -> Result<Event, Attempt> {
    let refuse = |e: ClusterError| Attempt::Refuse(e, None);
    let not_ours = |what: &str| {
        refuse(ClusterError::Unreachable {
            process: j,
            address: address.to_owned(),
            waited: start.elapsed(),
            error: format!("it answered, but not as a runsync-cluster process ({what})"),
        })
    };
    let key_refused = |reason: &str| {
        refuse(ClusterError::Key {
            process: j,
            address: address.to_owned(),
            reason: reason.to_owned(),
        })
    };
    let again = |what: &str, e: std::io::Error| Attempt::Again(format!("{what}: {e}"));
    // Each read waits for the other side until the deadline (a hello's wait at least).
    let until = || deadline.max(Instant::now() + HELLO_WAIT);
    let mine = nonce().map_err(|e| {
        refuse(ClusterError::Timely(format!(
            "cannot start the handshake: {e}"
        )))
    })?;
    let mut open = head(OPEN).to_vec();
    open.push(u8::from(key.keyed));
    open.extend_from_slice(&mine);
    s.set_nodelay(true)
        .and_then(|()| s.set_write_timeout(Some(HELLO_WAIT)))
        .and_then(|()| s.write_all(&open))
        .map_err(|e| again("it accepted the connection, then broke it", e))?;
    let mut first = [0u8; HEAD];
    read_by(&mut s, &mut first, until())
        .map_err(|e| again("it accepted the connection but did not answer", e))?;
    match Head::read(&first) {
        Head::Junk => return Err(not_ours("no magic")),
        Head::Version(v) => {
            return Err(refuse(ClusterError::Mismatch {
                process: Some(j),
                address: address.to_owned(),
                what: "the protocol version",
                here: PROTOCOL.to_string(),
                there: v.to_string(),
                fix: "run the same build of runsync-cluster on every process",
            }));
        }
        Head::Ours(len) if len as usize != CHALLENGE => {
            return Err(not_ours("an answer of another size"));
        }
        Head::Ours(_) => {}
    }
    let mut challenge = [0u8; CHALLENGE];
    read_by(&mut s, &mut challenge, until()).map_err(|e| again("it broke off the handshake", e))?;
    let keyed = match challenge[0] {
        0 => false,
        1 => true,
        _ => return Err(not_ours("a key flag other than 0 or 1")),
    };
    if let Some(why) = key.disagrees(keyed) {
        return Err(key_refused(why));
    }
    let nonce_there: [u8; NONCE] = challenge[1..1 + NONCE].try_into().expect("32 bytes");
    let proof: [u8; NONCE] = challenge[1 + NONCE..].try_into().expect("32 bytes");
    // blake3's `Hash` compares in constant time.
    if key.proof(ACCEPTING, &mine, &nonce_there) != blake3::Hash::from_bytes(proof) {
        return Err(key_refused(
            "its proof is of another key (or it is not a process of this run)",
        ));
    }
    let mut said = key
        .proof(CONNECTING, &mine, &nonce_there)
        .as_bytes()
        .to_vec();
    said.extend_from_slice(&hello.encode());
    s.write_all(&said)
        .map_err(|e| again("it broke off the handshake", e))?;
    let mut answer = [0u8; BODY];
    read_by(&mut s, &mut answer, until())
        .map_err(|e| again("it proved the key but did not say hello", e))?;
    let Some(theirs) = Hello::decode(&answer) else {
        return Err(not_ours("a malformed hello"));
    };
    if let Some((what, here, there, fix)) = difference(hello, &theirs) {
        let e = ClusterError::Mismatch {
            process: Some(j),
            address: address.to_owned(),
            what,
            here,
            there,
            fix,
        };
        return Err(Attempt::Refuse(e, Some(s)));
    }
    if theirs.process as usize != j {
        let e = ClusterError::Mismatch {
            process: Some(j),
            address: address.to_owned(),
            what: "the process index at this address",
            here: j.to_string(),
            there: theirs.process.to_string(),
            fix: "give every process the same address list, in process order",
        };
        return Err(Attempt::Refuse(e, Some(s)));
    }
    Ok(Event::Peer(j, s))
}
