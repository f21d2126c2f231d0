//! The sections of a save or replay file, as a tool outside runsync sees them (the layout
//! of `src/savefile.rs`): each section is followed by a trailer, its length (`u64`) and
//! CRC-32C (`u32`), so the file can be walked from its end. For tests that edit a file
//! on purpose (and make its checks again) or write it as version 2 did.

#![allow(dead_code)] // each test file uses some

use std::ops::Range;

/// A section's trailer: its length (`u64`) and CRC-32C (`u32`), after it.
pub(crate) const TRAILER: usize = 12;

fn u64_at(file: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(file[at..at + 8].try_into().unwrap())
}

/// The sections of a file, found from its end: each trailer gives the length of the
/// section before it. `None` if the trailers do not tile the file.
pub(crate) fn sections(file: &[u8]) -> Option<Vec<Range<usize>>> {
    let mut end = file.len();
    let mut found = Vec::new();
    while end > 0 {
        let trailer = end.checked_sub(TRAILER)?;
        let len = usize::try_from(u64_at(file, trailer)).ok()?;
        let start = trailer.checked_sub(len)?;
        found.push(start..trailer);
        end = start;
    }
    found.reverse();
    Some(found)
}

/// Makes every section's CRC-32C again for its bytes as they are: an edit made on
/// purpose, past the integrity check, to reach the checks of what a file means.
pub(crate) fn reseal(file: &mut [u8]) {
    for s in sections(file).expect("the trailers tile the file") {
        let crc = crc32c::crc32c(&file[s.clone()]);
        file[s.end + 8..s.end + TRAILER].copy_from_slice(&crc.to_le_bytes());
    }
}

/// The sections of a file, each its bytes (no trailer).
pub(crate) fn split(file: &[u8]) -> Vec<Vec<u8>> {
    sections(file)
        .expect("the trailers tile the file")
        .into_iter()
        .map(|s| file[s].to_vec())
        .collect()
}

/// Sections joined into a file, each with its trailer made for it: [`split`]'s inverse,
/// for an edit that changes a section's length.
pub(crate) fn join(sections: &[Vec<u8>]) -> Vec<u8> {
    let mut file = Vec::new();
    for s in sections {
        file.extend_from_slice(s);
        file.extend_from_slice(&(s.len() as u64).to_le_bytes());
        file.extend_from_slice(&crc32c::crc32c(s).to_le_bytes());
    }
    file
}

/// The sections of `file` with no trailers, the version set to 2: a save as version 2
/// wrote it.
pub(crate) fn version_2(file: &[u8]) -> Vec<u8> {
    let mut v2: Vec<u8> = sections(file)
        .expect("the trailers tile the file")
        .into_iter()
        .flat_map(|s| file[s].to_vec())
        .collect();
    v2[8..12].copy_from_slice(&2u32.to_le_bytes());
    v2
}
