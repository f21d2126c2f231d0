//! The arena in a real window: the simulation runs at a fixed 60 Hz through
//! `Runtime::advance`, and every display frame draws the agents interpolated between the
//! last two simulation frames, with Run and Sync times in the title.
//!
//! `cargo run --release -p runsync-tools --features window --example window`
//! (`-- 20000` for another agent count; Esc or closing the window quits).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::rc::Rc;
use std::time::Instant;

use runsync::prelude::*;
use runsync_systems::glam::Vec2;
use runsync_systems::{Position, Projectile, Team};
use runsync_tools::scenario::{ArenaConfig, arena_side, build};
use winit::application::ApplicationHandler;
use winit::event::{ElementState, KeyEvent, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{Key, NamedKey};
use winit::window::{Window, WindowId};

const COLORS: [u32; 4] = [0x3478c8, 0xe67e22, 0x2ea043, 0xc0392b];
const BACKGROUND: u32 = 0xf5f5f0;

struct App {
    rt: Runtime,
    side: f32,
    window: Option<Rc<Window>>,
    surface: Option<softbuffer::Surface<Rc<Window>, Rc<Window>>>,
    last: Instant,
    /// Positions before the last simulation frame, to interpolate from.
    previous: HashMap<Entity, Vec2>,
}

impl App {
    fn capture_positions(&self) -> HashMap<Entity, Vec2> {
        self.rt
            .world()
            .query::<(&Position,)>()
            .map(|(e, (p,))| (e, p.0))
            .collect()
    }

    fn draw(&mut self, alpha: f32) {
        let (Some(window), Some(surface)) = (&self.window, &mut self.surface) else {
            return;
        };
        let size = window.inner_size();
        let (Some(w), Some(h)) = (NonZeroU32::new(size.width), NonZeroU32::new(size.height)) else {
            return;
        };
        surface.resize(w, h).expect("resize the framebuffer");
        let mut buf = surface.buffer_mut().expect("the framebuffer");
        buf.fill(BACKGROUND);
        let (w, h) = (size.width as usize, size.height as usize);
        let scale = w.min(h) as f32 / self.side;
        let world = self.rt.world();
        let mut plot = |p: Vec2, color: u32, r: usize| {
            let (x, y) = ((p.x * scale) as usize, (p.y * scale) as usize);
            for dy in 0..r {
                for dx in 0..r {
                    let (px, py) = (x + dx, y + dy);
                    if px < w && py < h {
                        buf[py * w + px] = color;
                    }
                }
            }
        };
        for (e, (p, team)) in world.query::<(&Position, &Team)>() {
            let from = self.previous.get(&e).copied().unwrap_or(p.0);
            let at = from.lerp(p.0, alpha);
            if world.get::<Projectile>(e).is_some() {
                plot(at, 0x202020, 1);
            } else {
                plot(at, COLORS[usize::from(team.0) % COLORS.len()], 2);
            }
        }
        buf.present().expect("present the frame");
    }
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        let window = Rc::new(
            event_loop
                .create_window(
                    Window::default_attributes()
                        .with_title("runsync arena")
                        .with_inner_size(winit::dpi::LogicalSize::new(800.0, 800.0)),
                )
                .expect("create a window"),
        );
        let context = softbuffer::Context::new(window.clone()).expect("a softbuffer context");
        self.surface = Some(softbuffer::Surface::new(&context, window.clone()).expect("a surface"));
        self.window = Some(window);
        self.last = Instant::now();
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested
            | WindowEvent::KeyboardInput {
                event:
                    KeyEvent {
                        logical_key: Key::Named(NamedKey::Escape),
                        state: ElementState::Pressed,
                        ..
                    },
                ..
            } => event_loop.exit(),
            WindowEvent::RedrawRequested => {
                let now = Instant::now();
                let elapsed = now - self.last;
                self.last = now;
                // Positions before this advance: if it runs a frame, the picture moves from
                // these to the new ones as `alpha` goes from 0 to 1 (exact for one frame per
                // display frame, the usual case at 60 Hz and above).
                let before = self.capture_positions();
                let step = self.rt.advance(elapsed);
                if step.frames > 0 {
                    self.previous = before;
                    let stats = self.rt.stats();
                    if let Some(w) = &self.window {
                        w.set_title(&format!(
                            "runsync arena: {} entities, Run {:.2} ms, Sync {:.2} ms",
                            stats.entities,
                            stats.run.as_secs_f64() * 1e3,
                            stats.sync.as_secs_f64() * 1e3,
                        ));
                    }
                }
                self.draw(step.alpha);
                if let Some(w) = &self.window {
                    w.request_redraw();
                }
            }
            _ => {}
        }
    }
}

fn main() {
    let agents: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10_000);
    let rt = build(ArenaConfig {
        agents,
        seed: 1,
        workers: 0,
    });
    let event_loop = EventLoop::new().expect("an event loop (is a display available?)");
    event_loop.set_control_flow(ControlFlow::Poll);
    let mut app = App {
        rt,
        side: arena_side(agents),
        window: None,
        surface: None,
        last: Instant::now(),
        previous: HashMap::new(),
    };
    event_loop.run_app(&mut app).expect("run the event loop");
}
