//! Feeds arbitrary bytes to the save-file loaders (`World::load`, `Runtime::load`): each
//! must return an error or load a world that runs, never panic, abort on a huge
//! allocation, or hang. A failed load must leave the world as it was. Seed the corpus with
//! real saves for depth: `cargo test -p runsync --test save_files` builds the bad-file
//! corpus the same way.
//!
//! ```sh
//! cargo +nightly fuzz run load -- -max_total_time=60
//! ```

#![no_main]

use libfuzzer_sys::fuzz_target;
use runsync::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Component, Checksum, Clone, Copy, Debug, Serialize, Deserialize)]
#[component(merge = merge::last, checksum, save)]
struct Pos(f32, f32);

#[derive(Component, Checksum, Clone, Debug, Serialize, Deserialize)]
#[component(merge = merge::last, checksum, save)]
struct Name(String);

#[derive(Component, Checksum, Clone, Copy, Debug, Serialize, Deserialize)]
#[component(merge = merge::last, checksum, save)]
enum State {
    Idle,
    Busy(u8),
}

#[derive(Component, Clone, Debug, Serialize, Deserialize)]
#[component(output = u32)]
struct Log(Vec<u32>);

fn world() -> World {
    let mut w = World::new();
    w.register_default::<Pos>();
    w.register_default::<Name>();
    w.register_default::<State>();
    w.register_resource::<Log>(|l: &mut Log, d: &[u32]| l.0.extend_from_slice(d));
    w.saving_resource::<Log>();
    w.spawn((Pos(1.0, 2.0), State::Busy(3)));
    w
}

fuzz_target!(|data: &[u8]| {
    let mut w = world();
    let before = w.checksum();
    match w.load(&mut &data[..]) {
        Ok(()) => {
            let mut rt = Runtime::builder().workers(2).build(w);
            rt.add_system(|w: &World, out: &mut Output| {
                for (e, (p,)) in w.query::<(&Pos,)>() {
                    out.write::<Pos>(e, Pos(p.1, p.0));
                    out.spawn((State::Idle,));
                }
            });
            rt.frame();
            let _ = rt.world().checksum();
        }
        Err(e) => {
            assert_eq!(w.checksum(), before, "a failed load changed the world");
            let _ = e.to_string();
        }
    }
    let mut rt = Runtime::builder().workers(1).build(world());
    let _ = rt.load(&mut &data[..]);
});
