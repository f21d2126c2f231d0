//! Differential test: random systems emit random writes and structural commands (including
//! stale handles, double despawns, writes to missing components, zero-sized, padded and
//! `Drop` components); after every frame the runtime must agree exactly with the
//! sequential model in `model/mod.rs`.

mod model;

use model::{Spec, run_case};
use proptest::prelude::*;

fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        3 => (any::<u16>(), any::<u64>()).prop_map(|(p, v)| Spec::WriteA(p, v)),
        3 => (any::<u16>(), any::<i16>()).prop_map(|(p, v)| Spec::WriteB(p, v)),
        3 => (any::<u16>(), any::<i64>()).prop_map(|(p, v)| Spec::WriteC(p, v)),
        1 => any::<u16>().prop_map(Spec::Despawn),
        1 => (any::<u16>(), any::<u64>()).prop_map(|(p, v)| Spec::InsertA(p, v)),
        1 => (any::<u16>(), any::<i64>()).prop_map(|(p, v)| Spec::InsertC(p, v)),
        2 => (any::<u16>(), any::<u8>(), any::<u64>()).prop_map(|(p, a, b)| Spec::WriteP(p, a, b)),
        1 => (any::<u16>(), any::<u16>()).prop_map(|(p, c)| Spec::InsertP(p, c)),
        1 => any::<u16>().prop_map(Spec::InsertZ),
        1 => any::<u16>().prop_map(Spec::InsertD),
        1 => any::<u16>().prop_map(Spec::RemoveA),
        1 => any::<u16>().prop_map(Spec::RemoveB),
        1 => any::<u16>().prop_map(Spec::RemoveZ),
        1 => any::<u16>().prop_map(Spec::RemoveD),
        2 => (any::<Option<u64>>(), any::<Option<i16>>()).prop_map(|(a, b)| Spec::Spawn(a, b)),
    ]
}

fn cases() -> u32 {
    if cfg!(miri) { 4 } else { 96 }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        // Miri's isolation forbids the file access that persisting failures needs.
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    })]

    #[test]
    fn runtime_matches_sequential_model(
        workers in 1usize..=3,
        systems in 1usize..=4,
        initial in prop::collection::vec(
            (any::<Option<u64>>(), any::<Option<i16>>(), any::<bool>(), any::<bool>()), 0..24),
        frames in prop::collection::vec(
            prop::collection::vec(prop::collection::vec(spec(), 0..16), 4), 1..8),
    ) {
        run_case(workers, systems, frames, initial).map_err(TestCaseError::fail)?;
    }
}
