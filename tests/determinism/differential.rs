//! Differential test: random systems emit random writes and structural commands through
//! every write API (`write`, `Writer`, `write_each`, `par_for_each`, row writes of
//! `Output::query` with conditional writes), in shapes that stress
//! the merge engine (several systems writing the same entities in query order or in
//! reverse, repeats, interleaved types, stale handles, entities lacking the type), into
//! component types merged by every `merge::*` and by order-sensitive custom folds; after
//! every frame the runtime must agree exactly with the sequential model in `model/mod.rs`,
//! at 1, 2 and 8 workers alike. The same with the systems spread over one to three
//! stages (each stage's Sync is applied by the model in turn, and each later stage's Run
//! must see exactly the world the model says the stages before it left), with or without
//! required components (the model adds them on every spawn and insert).

use super::model;

use model::{Api, Batch, Initial, Kind, Loop, Shape, Spec, run_case, run_staged_case};
use proptest::prelude::*;

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        2 => Just(Kind::A),
        1 => Just(Kind::B),
        2 => Just(Kind::C),
        1 => Just(Kind::P),
        2 => Just(Kind::F),
        2 => Just(Kind::Lo),
        2 => Just(Kind::Hi),
        2 => Just(Kind::S),
        1 => Just(Kind::Z),
        1 => Just(Kind::D),
    ]
}

fn shape() -> impl Strategy<Value = Shape> {
    prop::sample::select(&Shape::ALL[..])
}

fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        8 => (kind(), any::<u16>(), any::<u64>()).prop_map(|(k, p, x)| Spec::Write(k, p, x)),
        1 => any::<u16>().prop_map(Spec::Despawn),
        2 => (kind(), any::<u16>(), any::<u64>()).prop_map(|(k, p, x)| Spec::Insert(k, p, x)),
        2 => (kind(), any::<u16>()).prop_map(|(k, p)| Spec::Remove(k, p)),
        1 => (any::<Option<u64>>(), any::<Option<i16>>(), prop::bool::weighted(0.3))
            .prop_map(|(a, b, deferred)| Spec::Spawn(a, b, deferred)),
        1 => (kind(), any::<u64>()).prop_map(|(k, x)| Spec::InsertSpawned(k, x)),
        1 => (kind(), any::<u64>()).prop_map(|(k, x)| Spec::WriteSpawned(k, x)),
        1 => any::<u64>().prop_map(Spec::WriteRes),
    ]
}

fn api() -> impl Strategy<Value = Api> {
    prop_oneof![
        2 => Just(Api::Write),
        1 => Just(Api::Writer),
        2 => Just(Api::WriteEach),
        2 => Just(Api::ParForEach),
        3 => Just(Api::RowWrites),
        2 => Just(Api::ParRowWrites),
    ]
}

/// A loop; `themed` loops take the frame's shape and first written type, so that several
/// systems write the same entities in the same order (aligned sources).
fn lp() -> impl Strategy<Value = (bool, Loop)> {
    (
        prop::bool::weighted(0.6),
        api(),
        shape(),
        prop::bool::weighted(0.25),
        prop_oneof![3 => Just(1u8), 1 => Just(2u8)],
        prop::collection::vec((kind(), any::<u64>()), 1..=3),
        prop::bool::weighted(0.4),
        prop::option::weighted(0.3, (kind(), any::<u16>())),
        prop::bool::weighted(0.15),
    )
        .prop_map(
            |(themed, api, shape, reverse, passes, mut writes, repeat, extra, despawn)| {
                // A repeat: the entity written twice with the same type in one visit.
                if repeat && writes.len() > 1 {
                    writes[1].0 = writes[0].0;
                }
                let l = Loop {
                    api,
                    shape,
                    reverse,
                    passes,
                    writes,
                    extra,
                    despawn,
                };
                (themed, l)
            },
        )
}

fn batch() -> impl Strategy<Value = (bool, Batch)> {
    prop_oneof![
        1 => (any::<bool>(), prop::collection::vec(spec(), 0..8))
            .prop_map(|(writer, specs)| (false, Batch::Ops { writer, specs })),
        // A burst of spawns, past the ids reserved for the system (overflow ids), with
        // inserts into and writes to the last one.
        1 => prop::collection::vec(
            prop_oneof![
                4 => (any::<Option<u64>>(), any::<Option<i16>>(), prop::bool::weighted(0.2))
                    .prop_map(|(a, b, deferred)| Spec::Spawn(a, b, deferred)),
                1 => (kind(), any::<u64>()).prop_map(|(k, x)| Spec::InsertSpawned(k, x)),
            ],
            8..48,
        )
        .prop_map(|specs| (false, Batch::Ops { writer: false, specs })),
        2 => lp().prop_map(|(themed, l)| (themed, Batch::Loop(l))),
    ]
}

/// Per system, its batches.
fn frame() -> impl Strategy<Value = Vec<Vec<Batch>>> {
    (
        shape(),
        kind(),
        prop::collection::vec(prop::collection::vec(batch(), 0..4), 4),
    )
        .prop_map(|(theme, k, systems)| {
            systems
                .into_iter()
                .map(|batches| {
                    batches
                        .into_iter()
                        .map(|(themed, mut b)| {
                            if let (true, Batch::Loop(l)) = (themed, &mut b) {
                                l.shape = theme;
                                l.writes[0].0 = k;
                            }
                            b
                        })
                        .collect()
                })
                .collect()
        })
}

fn initial() -> impl Strategy<Value = Initial> {
    (
        any::<Option<u64>>(),
        any::<Option<i16>>(),
        any::<u8>(),
        any::<u64>(),
    )
        .prop_map(|(a, b, flags, seed)| Initial { a, b, flags, seed })
}

/// Small worlds, and (not under Miri) some large enough that `par_for_each` splits its
/// query into several chunks at 2 and 8 workers.
fn population() -> impl Strategy<Value = Vec<Initial>> {
    let large = if cfg!(miri) { 0..8 } else { 64..200 };
    prop_oneof![
        3 => prop::collection::vec(initial(), 0..24),
        1 => prop::collection::vec(initial(), large),
    ]
}

/// Few enough cases for a debug run of every `cargo test` (each case runs three times);
/// `PROPTEST_CASES` overrides it for longer soaks. The staged cases run a quarter as many.
fn cases() -> u32 {
    let default = if cfg!(miri) { 4 } else { 512 };
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// The suites' configuration: `cases` cases, failures persisted (except under Miri, whose
/// isolation forbids the file access that needs).
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(cases()))]

    #[test]
    fn runtime_matches_sequential_model(
        systems in 1usize..=4,
        initial in population(),
        frames in prop::collection::vec(frame(), if cfg!(miri) { 1..3 } else { 1..7 }),
    ) {
        run_case(systems, &frames, &initial).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(config(cases().div_ceil(4)))]

    /// Stages (one to three) and required components (on or off).
    #[test]
    fn staged_runtime_with_requirements_matches_sequential_model(
        stages in 1usize..=3,
        stage_of in prop::collection::vec(0usize..3, 1..=4),
        requires in any::<bool>(),
        initial in population(),
        frames in prop::collection::vec(frame(), if cfg!(miri) { 1..2 } else { 1..5 }),
    ) {
        let stage_of: Vec<usize> = stage_of.into_iter().map(|k| k % stages).collect();
        run_staged_case(&stage_of, stages, requires, &frames, &initial)
            .map_err(TestCaseError::fail)?;
    }
}
