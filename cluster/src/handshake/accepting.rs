//! The accepting side of a start: takes the connections that come in, each greeted on a
//! small thread of its own within [`HELLO_WAIT`], a bounded number at once.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::events::{Event, Refusals};
use super::key::{ACCEPTING, CONNECTING, Key, NONCE, nonce};
use super::wire::{BODY, CHALLENGE, HEAD, HELLO_WAIT, Head, Hello, OPEN, PROTOCOL, head, read_by};

/// Connections greeted at once; one past these is closed at once.
pub(crate) const MAX_GREETINGS: usize = 64;
/// The stack of a thread that greets a connection (it reads a few fixed-size messages).
const GREETING_STACK: usize = 256 * 1024;

/// Counts a greeting under way while alive.
struct Greeting(Arc<AtomicUsize>);

impl Drop for Greeting {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Accepts connections until `deadline` (or `stop`), greeting each one on a thread of its
/// own, [`MAX_GREETINGS`] at most at once.
pub(super) fn accept(
    listener: &TcpListener,
    hello: &Hello,
    key: &Key,
    deadline: Instant,
    stop: &AtomicBool,
    refusals: &Arc<Refusals>,
    tx: &mpsc::Sender<Event>,
) {
    let greetings = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        match listener.accept() {
            Ok((stream, from)) => {
                if greetings.load(Ordering::Relaxed) >= MAX_GREETINGS {
                    refusals.refuse(
                        from,
                        &format!("{MAX_GREETINGS} connections are saying hello already"),
                    );
                    drop(stream);
                    continue;
                }
                greetings.fetch_add(1, Ordering::Relaxed);
                let counted = Greeting(greetings.clone());
                let (tx, hello, key, refusals) =
                    (tx.clone(), hello.clone(), key.clone(), refusals.clone());
                // A thread that cannot start drops its closure: the count goes down and
                // the connection closes.
                let _ = std::thread::Builder::new()
                    .name("runsync-cluster:hello".into())
                    .stack_size(GREETING_STACK)
                    .spawn(move || {
                        let event = match greet(stream, &hello, &key) {
                            Ok((theirs, stream)) => Event::Hello(theirs, stream, from),
                            Err(why) => {
                                refusals.refuse(from, &why);
                                Event::Refused
                            }
                        };
                        drop(counted);
                        let _ = tx.send(event);
                    });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// The accepting side of steps 2 and 3 on a connection that came in, within
/// [`HELLO_WAIT`] in all: its hello once it proved the key, else why it is refused.
fn greet(mut s: TcpStream, hello: &Hello, key: &Key) -> Result<(Hello, TcpStream), String> {
    let until = Instant::now() + HELLO_WAIT;
    let wait = HELLO_WAIT.as_secs_f64();
    // What was missing (`what`), and how the connection ended.
    let said = |what: &str, e: std::io::Error| match e.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
            format!("{what} within {wait:.1} s")
        }
        std::io::ErrorKind::UnexpectedEof => format!("{what}: it closed the connection"),
        _ => format!("{what}: {e}"),
    };
    s.set_nonblocking(false)
        .and_then(|()| s.set_nodelay(true))
        .and_then(|()| s.set_write_timeout(Some(HELLO_WAIT)))
        .map_err(|e| format!("cannot set up the connection: {e}"))?;
    let mut first = [0u8; HEAD];
    read_by(&mut s, &mut first, until).map_err(|e| said("no opening of the handshake", e))?;
    match Head::read(&first) {
        Head::Junk => return Err("it does not speak the runsync-cluster protocol".into()),
        Head::Version(v) => {
            // Only the magic and this version: a process of another build says what
            // differs; a stranger learns nothing of this run.
            let _ = s.write_all(&head(0));
            return Err(format!(
                "it speaks protocol version {v}, this process {PROTOCOL} (not a process \
                 of this run, or one of another build: run the same build everywhere)"
            ));
        }
        Head::Ours(len) if len as usize != OPEN => {
            return Err(format!("an opening of {len} bytes, not {OPEN}"));
        }
        Head::Ours(_) => {}
    }
    let mut open = [0u8; OPEN];
    read_by(&mut s, &mut open, until).map_err(|e| said("no opening of the handshake", e))?;
    let keyed = match open[0] {
        0 => false,
        1 => true,
        _ => return Err("a key flag other than 0 or 1".into()),
    };
    let nonce_there: [u8; NONCE] = open[1..].try_into().expect("32 bytes");
    let mine = nonce().map_err(|e| format!("cannot answer: {e}"))?;
    let mut challenge = head(CHALLENGE).to_vec();
    challenge.push(u8::from(key.keyed));
    challenge.extend_from_slice(&mine);
    challenge.extend_from_slice(key.proof(ACCEPTING, &nonce_there, &mine).as_bytes());
    s.write_all(&challenge)
        .map_err(|e| said("it did not take the answer", e))?;
    let mut proof = [0u8; NONCE];
    let mut body = [0u8; BODY];
    let unproven = |e| match key.disagrees(keyed) {
        Some(why) => format!("{why}; {}", said("no proof of the cluster key", e)),
        None => said("no proof of the cluster key", e),
    };
    read_by(&mut s, &mut proof, until).map_err(unproven)?;
    // blake3's `Hash` compares in constant time.
    if key.proof(CONNECTING, &nonce_there, &mine) != blake3::Hash::from_bytes(proof) {
        return Err(match key.disagrees(keyed) {
            Some(why) => why.to_owned(),
            None => "a wrong proof of the cluster key (another key, or none)".to_owned(),
        });
    }
    read_by(&mut s, &mut body, until)
        .map_err(|e| said("it proved the key but said no hello", e))?;
    let theirs = Hello::decode(&body).ok_or("it proved the key but its hello is malformed")?;
    s.write_all(&hello.encode())
        .map_err(|e| said("it did not take this process's hello", e))?;
    Ok((theirs, s))
}
