//! World-wide values ([`Cluster::global`](crate::Cluster::global)): each one's part and
//! fold behind one type-erased trait, so a shard holds them in one list.

use runsync::{LoadError, SaveError, World};

use crate::error::ClusterError;

/// A world-wide value's part and fold, type-erased: see
/// [`Cluster::global`](crate::Cluster::global).
pub(crate) trait GlobalValue: Send + Sync {
    /// Appends this world's part, encoded.
    fn part(&self, world: &World, out: &mut Vec<u8>) -> Result<(), ClusterError>;
    /// Decodes the parts (in shard order), folds them and inserts the total.
    fn insert(&self, parts: &[&[u8]], world: &mut World) -> Result<(), ClusterError>;
    /// The value's type (for the schema processes compare).
    fn type_name(&self) -> &'static str;
}

pub(crate) struct Global<R> {
    pub(crate) part: fn(&World) -> R,
    pub(crate) combine: fn(&mut R, R),
}

impl<R> GlobalValue for Global<R>
where
    R: serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    fn part(&self, world: &World, out: &mut Vec<u8>) -> Result<(), ClusterError> {
        let bytes = postcard::to_allocvec(&(self.part)(world)).map_err(|e| {
            ClusterError::Save(SaveError::Encode {
                type_name: std::any::type_name::<R>(),
                message: e.to_string(),
            })
        })?;
        out.extend_from_slice(&bytes);
        Ok(())
    }

    fn type_name(&self) -> &'static str {
        std::any::type_name::<R>()
    }

    fn insert(&self, parts: &[&[u8]], world: &mut World) -> Result<(), ClusterError> {
        let mut total: Option<R> = None;
        for bytes in parts {
            let part: R = postcard::from_bytes(bytes).map_err(|e| {
                ClusterError::Load(LoadError::BadData {
                    what: format!("a part of `{}`: {e}", std::any::type_name::<R>()),
                })
            })?;
            match &mut total {
                None => total = Some(part),
                Some(t) => (self.combine)(t, part),
            }
        }
        if let Some(t) = total {
            world.insert_resource(t);
        }
        Ok(())
    }
}
