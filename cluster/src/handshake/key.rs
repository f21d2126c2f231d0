//! The cluster key and the proofs made with it: a keyed BLAKE3 hash over both sides'
//! nonces, a different one for each side.

/// The bytes of a nonce, a key and a proof.
pub(super) const NONCE: usize = 32;
/// What the key is derived with, and what each side's proof hashes before the nonces:
/// the two proofs differ, so one side's proof is never the other's.
const KEY_CONTEXT: &str = "runsync-cluster 2 handshake: the cluster key";
pub(super) const ACCEPTING: &[u8] = b"runsync-cluster 2: the accepting side's proof";
pub(super) const CONNECTING: &[u8] = b"runsync-cluster 2: the connecting side's proof";

/// The shared secret a handshake proves ([`Cluster::key`](crate::Cluster::key)): 32 bytes
/// derived from the caller's key (any length), or the key everyone knows when there is
/// none. Never printed.
#[derive(Clone)]
pub(crate) struct Key {
    /// The derived key.
    bytes: [u8; 32],
    /// Whether the caller gave a key.
    pub(super) keyed: bool,
}

impl Key {
    /// No key: the proofs tell only that both sides speak this protocol.
    pub(crate) fn none() -> Key {
        Key {
            bytes: blake3::derive_key(KEY_CONTEXT, b""),
            keyed: false,
        }
    }

    /// The key `secret` (a passphrase, or random bytes).
    pub(crate) fn of(secret: &[u8]) -> Key {
        Key {
            bytes: blake3::derive_key(KEY_CONTEXT, secret),
            keyed: true,
        }
    }

    /// A side's proof (`role`: [`ACCEPTING`] or [`CONNECTING`]) over both nonces.
    pub(super) fn proof(
        &self,
        role: &[u8],
        connecting: &[u8; NONCE],
        accepting: &[u8; NONCE],
    ) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&self.bytes);
        h.update(role);
        h.update(connecting);
        h.update(accepting);
        h.finalize()
    }

    /// Why `there` (a peer's "has a key") and this key cannot agree, if they cannot.
    pub(super) fn disagrees(&self, there: bool) -> Option<&'static str> {
        match (self.keyed, there) {
            (true, false) => Some("it runs without a cluster key, this process with one"),
            (false, true) => Some("it runs with a cluster key, this process without one"),
            _ => None,
        }
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.keyed { "Key(..)" } else { "Key(none)" })
    }
}

/// A fresh nonce from the operating system.
pub(super) fn nonce() -> std::io::Result<[u8; NONCE]> {
    let mut n = [0u8; NONCE];
    getrandom::fill(&mut n).map_err(|e| std::io::Error::other(format!("no random source: {e}")))?;
    Ok(n)
}
