//! Which component types a desync is in, told by the checksums peers already exchange.
//!
//! ggrs carries a 128-bit checksum per reported frame; runsync's world checksum is 64
//! bits. The other 64 carry, for the frames ggrs reports (every `desync_interval`-th), a
//! few bits of each part of [`World::checksum_parts`](runsync::World::checksum_parts):
//! the entity layout, then each checksummed type. When the two peers' checksums of a
//! frame differ, the parts whose bits differ are the types that differ — known to each
//! peer from the other's digest alone, without its state.
//!
//! With `k` parts each gets `64 / k` bits (at least 1; past 64 parts, parts share bits):
//! a part whose bits differ certainly differs; one that differs shows equal bits with
//! probability `2^-(64 / k)` (1 in 256 for the duel's 8 parts, 1 in 8 for 20 parts). The
//! layout part is first: when it differs, entities were spawned or despawned
//! differently, and the other parts' digests then say little.

/// The high 64 bits for `parts`: each part's digest folded into its share of the bits.
pub(crate) fn pack(parts: &[(&'static str, u64)]) -> u64 {
    let Some(bits) = bits_per_part(parts.len()) else {
        return 0;
    };
    let mut packed = 0u64;
    for (i, &(_, digest)) in parts.iter().enumerate() {
        packed ^= fold(digest, bits) << ((i as u32 * bits) % 64);
    }
    packed
}

/// The parts (of `parts`, this peer's) whose bits differ between this peer's high 64
/// bits and another's.
pub(crate) fn differing(
    parts: &[(&'static str, u64)],
    ours: u64,
    theirs: u64,
) -> Vec<&'static str> {
    let Some(bits) = bits_per_part(parts.len()) else {
        return Vec::new();
    };
    let diff = ours ^ theirs;
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    };
    parts
        .iter()
        .enumerate()
        .filter(|&(i, _)| (diff >> ((i as u32 * bits) % 64)) & mask != 0)
        .map(|(_, &(name, _))| name)
        .collect()
}

/// How many bits each of `n` parts gets (`None` for no parts).
fn bits_per_part(n: usize) -> Option<u32> {
    (n > 0).then(|| (64 / n.min(64)) as u32)
}

/// `digest` folded (xor of its `bits`-wide pieces) into `bits` bits.
fn fold(digest: u64, bits: u32) -> u64 {
    if bits >= 64 {
        return digest;
    }
    let mask = (1u64 << bits) - 1;
    let mut folded = 0;
    let mut rest = digest;
    while rest != 0 {
        folded ^= rest & mask;
        rest >>= bits;
    }
    folded
}

#[cfg(test)]
mod tests {
    use super::*;

    fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    const NAMES: [&str; 70] = [
        "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9", "p10", "p11", "p12", "p13",
        "p14", "p15", "p16", "p17", "p18", "p19", "p20", "p21", "p22", "p23", "p24", "p25", "p26",
        "p27", "p28", "p29", "p30", "p31", "p32", "p33", "p34", "p35", "p36", "p37", "p38", "p39",
        "p40", "p41", "p42", "p43", "p44", "p45", "p46", "p47", "p48", "p49", "p50", "p51", "p52",
        "p53", "p54", "p55", "p56", "p57", "p58", "p59", "p60", "p61", "p62", "p63", "p64", "p65",
        "p66", "p67", "p68", "p69",
    ];

    /// A changed part is always named (its bits change unless its folded digest
    /// collides); an unchanged one never is, for any number of parts up to 64.
    #[test]
    fn the_parts_whose_digests_differ_are_named_and_no_other() {
        let mut rng = 1;
        for n in 1..=64 {
            let parts: Vec<(&'static str, u64)> = NAMES[..n]
                .iter()
                .map(|&name| (name, splitmix(&mut rng)))
                .collect();
            let ours = pack(&parts);
            assert_eq!(differing(&parts, ours, ours), Vec::<&str>::new());
            let mut missed = 0;
            for changed in 0..n {
                let mut theirs_parts = parts.clone();
                theirs_parts[changed].1 = splitmix(&mut rng);
                let named = differing(&parts, ours, pack(&theirs_parts));
                assert!(named.len() <= 1, "{n} parts: {named:?}");
                match named.first() {
                    Some(&name) => assert_eq!(name, parts[changed].0),
                    None => missed += 1,
                }
            }
            // With b bits a part, a change goes unseen with probability 2^-b.
            let bits = 64 / n;
            if bits >= 8 {
                assert_eq!(missed, 0, "{n} parts");
            }
        }
    }

    #[test]
    fn past_64_parts_a_difference_names_the_parts_sharing_its_bit() {
        let parts: Vec<(&'static str, u64)> = NAMES.iter().map(|&n| (n, 0)).collect();
        let ours = pack(&parts);
        let mut theirs = parts.clone();
        theirs[3].1 = 1;
        // Part 3 and part 67 share bit 3.
        assert_eq!(differing(&parts, ours, pack(&theirs)), ["p3", "p67"]);
        assert_eq!(pack(&[]), 0);
        assert!(differing(&[], 1, 2).is_empty());
    }
}
