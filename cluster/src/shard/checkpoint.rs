//! A shard's checkpoint: written after a frame, read back to resume (see
//! [`Cluster::checkpoints`](crate::Cluster::checkpoints)).

use std::path::{Path, PathBuf};

use super::{MIGRANT, Shard};
use crate::error::ClusterError;
use crate::ids::{Agreement, Ids};
use crate::rounds::Record;

/// The checkpoint file of shard `shard` of `shards` after frame `frame` in `dir`.
pub fn checkpoint_path(dir: &Path, shard: usize, shards: usize, frame: u64) -> PathBuf {
    dir.join(format!("shard-{shard}-of-{shards}-frame-{frame}.runsync"))
}

impl Shard {
    /// Writes this shard's checkpoint after `frame` (see
    /// [`Cluster::checkpoints`](crate::Cluster::checkpoints)): the runtime save's length
    /// and bytes, then the migrants received (count, then each record's length and
    /// bytes), then the whole world's entity allocator (length and bytes:
    /// [`Ids::encode`]), little-endian.
    pub(crate) fn checkpoint(&self, dir: &Path, frame: u64) -> Result<(), ClusterError> {
        let mut save = Vec::new();
        self.rt.save(&mut save).map_err(ClusterError::Save)?;
        let mut file = Vec::with_capacity(save.len() + 16);
        file.extend_from_slice(&(save.len() as u64).to_le_bytes());
        file.extend_from_slice(&save);
        let migrants: Vec<&Record> = self.received.iter().filter(|r| r.1 == MIGRANT).collect();
        file.extend_from_slice(&(migrants.len() as u64).to_le_bytes());
        for (_, _, bytes) in migrants {
            file.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            file.extend_from_slice(bytes);
        }
        let mut ids = Vec::new();
        self.ids.encode(&mut ids);
        file.extend_from_slice(&(ids.len() as u64).to_le_bytes());
        file.extend_from_slice(&ids);
        let path = checkpoint_path(dir, self.index, self.shards, frame);
        let io = |error| ClusterError::Io {
            path: path.clone(),
            error,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let tmp = path.with_extension("partial");
        std::fs::write(&tmp, &file).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)
    }

    /// Loads this shard's checkpoint after `frame` and imports its migrants.
    pub(crate) fn resume(&mut self, dir: &Path, frame: u64) -> Result<(), ClusterError> {
        let path = checkpoint_path(dir, self.index, self.shards, frame);
        let file = std::fs::read(&path).map_err(|error| ClusterError::Io {
            path: path.clone(),
            error,
        })?;
        let bad = |what: &str| ClusterError::Io {
            path: path.clone(),
            error: std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned()),
        };
        let mut src = &file[..];
        let mut take = |n: usize, what: &str| -> Result<&[u8], ClusterError> {
            if src.len() < n {
                return Err(bad(what));
            }
            let (head, rest) = src.split_at(n);
            src = rest;
            Ok(head)
        };
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize;
        let len = word(take(8, "a truncated checkpoint")?);
        let save = take(len, "a truncated checkpoint")?;
        self.rt.load(&mut &save[..]).map_err(ClusterError::Load)?;
        let world = self.rt.world_mut();
        self.agreement = Agreement::new(world.query::<()>().map(|(e, ())| e).collect());
        let n = word(take(8, "a truncated checkpoint")?);
        for _ in 0..n {
            let len = word(take(8, "a truncated checkpoint")?);
            let record = take(len, "a truncated checkpoint")?;
            let e = world
                .import_entity(&mut &record[..])
                .map_err(ClusterError::Load)?;
            self.agreement.placed(e);
            self.agreement.owned.push(e);
        }
        let len = word(take(8, "a truncated checkpoint")?);
        self.ids = Ids::decode(take(len, "a truncated checkpoint")?)
            .ok_or_else(|| bad("a bad entity allocator"))?;
        if !src.is_empty() {
            return Err(bad("bytes after the checkpoint's end"));
        }
        Ok(())
    }
}
