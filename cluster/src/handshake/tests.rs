//! The handshake between real sockets on loopback: peers meet, differences are named on
//! both sides, and strangers (junk, silence, another key, too many at once) are refused
//! without keeping the peers apart.

use super::accepting::MAX_GREETINGS;
use super::key::{ACCEPTING, CONNECTING, NONCE, nonce};
use super::wire::{CHALLENGE, HEAD, Head, OPEN, head};
use super::*;

/// Digests a stranger must never see.
const SCHEMA: u64 = 0x5C4E_3A00_0000_0007;
const WORLD: u64 = 0x3012_1D00_0000_0011;
const FINGERPRINT: u64 = 0xF1E6_E200_0000_0013;

fn hello(process: u32) -> Hello {
    Hello {
        process,
        processes: 2,
        threads: 1,
        frames: 90,
        resume: 0,
        checkpoints: 0,
        checksums: true,
        schema: SCHEMA,
        world: WORLD,
        fingerprint: FINGERPRINT,
    }
}

/// Runs process `me`'s side of the handshake on a thread.
fn start(
    addresses: &[String],
    me: usize,
    hello: Hello,
    key: Key,
    wait: Duration,
) -> std::thread::JoinHandle<Result<Vec<Option<TcpStream>>, ClusterError>> {
    let addresses = addresses.to_vec();
    std::thread::spawn(move || connect(&addresses, me, &hello, &key, wait))
}

/// Connects to `address`, retrying for 10 s (the process may not listen yet).
fn dial(address: &str) -> TcpStream {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        match TcpStream::connect(address) {
            Ok(s) => return s,
            Err(_) if Instant::now() < until => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => panic!("{address}: {e}"),
        }
    }
}

/// Whether `bytes` hold any digest of [`hello`] (either byte order).
fn holds_a_digest(bytes: &[u8]) -> bool {
    [SCHEMA, WORLD, FINGERPRINT].iter().any(|d| {
        [d.to_le_bytes(), d.to_be_bytes()]
            .iter()
            .any(|d| bytes.windows(8).any(|w| w == d))
    })
}

#[test]
fn a_hello_round_trips_and_junk_is_told_apart() {
    let h = hello(1);
    assert_eq!(Hello::decode(&h.encode()), Some(h.clone()));
    let mut bad = h.encode();
    bad[36] = 2;
    assert_eq!(Hello::decode(&bad), None, "a checksums flag of 2");
    assert_eq!(Head::read(&head(OPEN)), Head::Ours(OPEN as u32));
    assert_eq!(Head::read(&[0u8; HEAD]), Head::Junk);
    let mut other = head(0);
    other[8] = 9;
    assert_eq!(Head::read(&other), Head::Version(9));
}

#[test]
fn differences_are_named_in_order() {
    let (a, mut b) = (hello(0), hello(1));
    assert_eq!(difference(&a, &b), None, "the index is not compared here");
    b.world = 12;
    b.threads = 2;
    let (what, here, there, _) = difference(&a, &b).unwrap();
    assert_eq!(
        (what, &here[..], &there[..]),
        ("the shards per process", "1", "2")
    );
    b.threads = 1;
    assert_eq!(difference(&a, &b).unwrap().0, "the initial world's digest");
    b.world = WORLD;
    b.checksums = false;
    assert_eq!(difference(&a, &b).unwrap().0, "computing checksums");
}

#[test]
fn proofs_differ_by_key_side_and_nonce() {
    let (a, b) = (Key::of(b"one"), Key::of(b"two"));
    let (n, m) = ([1u8; NONCE], [2u8; NONCE]);
    assert_eq!(
        a.proof(ACCEPTING, &n, &m),
        Key::of(b"one").proof(ACCEPTING, &n, &m)
    );
    assert_ne!(a.proof(ACCEPTING, &n, &m), b.proof(ACCEPTING, &n, &m));
    assert_ne!(a.proof(ACCEPTING, &n, &m), a.proof(CONNECTING, &n, &m));
    assert_ne!(a.proof(ACCEPTING, &n, &m), a.proof(ACCEPTING, &m, &n));
    assert_ne!(
        a.proof(ACCEPTING, &n, &m),
        Key::none().proof(ACCEPTING, &n, &m)
    );
    assert_ne!(nonce().unwrap(), nonce().unwrap());
    assert_eq!(format!("{a:?}"), "Key(..)", "a key is never printed");
}

#[test]
fn peers_with_one_key_meet_and_so_do_peers_without_one() {
    for key in [Key::of(b"the cluster key"), Key::none()] {
        let addresses = crate::loopback::loopback_addresses(2).unwrap();
        let wait = Duration::from_secs(10);
        let p0 = start(&addresses, 0, hello(0), key.clone(), wait);
        let p1 = start(&addresses, 1, hello(1), key.clone(), wait);
        let (s0, s1) = (p0.join().unwrap().unwrap(), p1.join().unwrap().unwrap());
        assert!(s0[0].is_none() && s0[1].is_some(), "{key:?}");
        assert!(s1[0].is_some() && s1[1].is_none(), "{key:?}");
    }
}

#[test]
fn peers_that_prove_the_key_and_differ_are_a_mismatch_on_both() {
    let addresses = crate::loopback::loopback_addresses(2).unwrap();
    let key = Key::of(b"the cluster key");
    let wait = Duration::from_secs(10);
    let p0 = start(&addresses, 0, hello(0), key.clone(), wait);
    let other = Hello {
        world: 12,
        ..hello(1)
    };
    let p1 = start(&addresses, 1, other, key, wait);
    for (i, result) in [p0.join().unwrap(), p1.join().unwrap()]
        .into_iter()
        .enumerate()
    {
        match result {
            Err(ClusterError::Mismatch { what, .. }) => {
                assert_eq!(what, "the initial world's digest", "process {i}");
            }
            other => panic!("process {i}: {other:?}"),
        }
    }
}

#[test]
fn a_stranger_of_this_version_without_the_key_learns_no_digest_and_the_peers_meet() {
    let addresses = crate::loopback::loopback_addresses(2).unwrap();
    let key = Key::of(b"the cluster key");
    let p0 = start(
        &addresses,
        0,
        hello(0),
        key.clone(),
        Duration::from_secs(10),
    );
    // Strangers that speak the protocol: one says it has a key (and guesses a proof),
    // one says it has none (and proves the key everyone knows). Each says hello.
    for (keyed, guess) in [(1u8, Key::of(b"a guess")), (0, Key::none())] {
        let mut s = dial(&addresses[0]);
        let mine = nonce().unwrap();
        let mut open = head(OPEN).to_vec();
        open.push(keyed);
        open.extend_from_slice(&mine);
        s.write_all(&open).unwrap();
        let mut answer = [0u8; HEAD + CHALLENGE];
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.read_exact(&mut answer).unwrap();
        assert_eq!(
            Head::read(answer[..HEAD].try_into().unwrap()),
            Head::Ours(CHALLENGE as u32)
        );
        assert_eq!(answer[HEAD], 1, "it says it has a key");
        let theirs: [u8; NONCE] = answer[HEAD + 1..HEAD + 1 + NONCE].try_into().unwrap();
        let mut said = guess.proof(CONNECTING, &mine, &theirs).as_bytes().to_vec();
        said.extend_from_slice(&hello(1).encode());
        s.write_all(&said).unwrap();
        // Nothing more: the connection closes.
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        assert!(rest.is_empty(), "a stranger got {rest:02x?}");
        assert!(!holds_a_digest(&answer), "a stranger got {answer:02x?}");
    }
    // Process 0 waited on: the real process 1 comes.
    let p1 = start(&addresses, 1, hello(1), key, Duration::from_secs(10));
    assert!(p1.join().unwrap().is_ok());
    assert!(p0.join().unwrap().is_ok());
}

#[test]
fn a_wrong_key_or_none_is_refused_by_the_connecting_side_and_ignored_by_the_other() {
    let cases = [
        (
            Key::of(b"one"),
            Key::of(b"two"),
            "its proof is of another key",
        ),
        (
            Key::of(b"one"),
            Key::none(),
            "with a cluster key, this process without",
        ),
        (
            Key::none(),
            Key::of(b"two"),
            "without a cluster key, this process with one",
        ),
    ];
    for (k0, k1, why) in cases {
        let addresses = crate::loopback::loopback_addresses(2).unwrap();
        let p0 = start(&addresses, 0, hello(0), k0.clone(), Duration::from_secs(2));
        let started = Instant::now();
        let p1 = start(&addresses, 1, hello(1), k1.clone(), Duration::from_secs(10));
        match p1.join().unwrap() {
            Err(e @ ClusterError::Key { .. }) => {
                assert!(e.to_string().contains(why), "{k0:?} {k1:?}: {e}");
                assert!(started.elapsed() < Duration::from_secs(5), "{k0:?} {k1:?}");
            }
            other => panic!("{k0:?} {k1:?}: {other:?}"),
        }
        // Process 0 took it for a stranger: it waited for process 1 to the end.
        match p0.join().unwrap() {
            Err(ClusterError::NoPeer { process: 1, .. }) => {}
            other => panic!("{k0:?} {k1:?}: {other:?}"),
        }
    }
}

#[test]
fn silent_slow_and_many_strangers_do_not_keep_the_peers_apart() {
    let addresses = crate::loopback::loopback_addresses(2).unwrap();
    let key = Key::none();
    let p0 = start(
        &addresses,
        0,
        hello(0),
        key.clone(),
        Duration::from_secs(20),
    );
    // One that sends a byte every 300 ms: dropped after a hello's wait, however long
    // it would go on.
    let mut slow = dial(&addresses[0]);
    let dripping = std::thread::spawn(move || {
        let start = Instant::now();
        for b in head(OPEN) {
            if slow.write_all(&[b]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        start.elapsed()
    });
    // Many that say nothing, more than are greeted at once; all kept open.
    let silent: Vec<TcpStream> = (0..2 * MAX_GREETINGS)
        .filter_map(|_| {
            let a = addresses[0].parse().unwrap();
            TcpStream::connect_timeout(&a, Duration::from_secs(1)).ok()
        })
        .collect();
    assert!(silent.len() > MAX_GREETINGS, "{}", silent.len());
    let started = Instant::now();
    let p1 = start(&addresses, 1, hello(1), key, Duration::from_secs(20));
    assert!(p1.join().unwrap().is_ok());
    assert!(p0.join().unwrap().is_ok());
    // The peers met once the strangers' greetings ran out, not at the connect timeout.
    let took = started.elapsed();
    assert!(took < HELLO_WAIT * 3, "{took:?}");
    // The slow one was cut off before it sent its 16 bytes (16 × 300 ms).
    assert!(dripping.join().unwrap() < Duration::from_millis(4_500));
    drop(silent);
}
