//! A picture of the world, drawn by the game: the shapes a game's
//! [`picture`](crate::InspectorBuilder::picture) hook gives for one frame's state, sent to
//! the page as JSON (`GET /api/picture`) and drawn there on a canvas.
//!
//! The shapes are kept as flat lists of numbers per kind, colours as indices into a
//! palette: a 20k-unit picture is a few hundred KB of JSON, built with no allocation per
//! shape once the lists have grown (a picture is made for each request, on the game
//! thread, between frames).

use std::collections::HashMap;

use serde::Serialize;

/// Most shapes one picture holds; more are counted and dropped (`truncated`).
pub const MAX_SHAPES: usize = 200_000;

/// Most text labels one picture holds.
pub const MAX_LABELS: usize = 1_000;

/// A colour: red, green, blue and opacity (255: opaque).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Color {
    /// Red, 0 to 255.
    pub r: u8,
    /// Green, 0 to 255.
    pub g: u8,
    /// Blue, 0 to 255.
    pub b: u8,
    /// Opacity, 0 (invisible) to 255 (opaque).
    pub a: u8,
}

impl Color {
    /// An opaque colour.
    pub const fn rgb(r: u8, g: u8, b: u8) -> Color {
        Color { r, g, b, a: 255 }
    }

    /// This colour with opacity `a` (0 to 1).
    pub fn alpha(self, a: f32) -> Color {
        Color {
            a: (a.clamp(0.0, 1.0) * 255.0).round() as u8,
            ..self
        }
    }

    fn css(self) -> String {
        format!("#{:02x}{:02x}{:02x}{:02x}", self.r, self.g, self.b, self.a)
    }
}

/// The shapes of one picture of the world, in world coordinates, given by the game's
/// [`picture`](crate::InspectorBuilder::picture) hook. The page fits
/// [`bounds`](Self::bounds) (else all the shapes) to its canvas, y up unless
/// [`y_down`](Self::y_down); shapes are drawn in kind order — rectangles, lines,
/// circles, dots, labels — each kind in the order given.
///
/// ```
/// use runsync_inspect::{Color, Picture};
/// # let mut picture = Picture::default();
/// picture.bounds([0.0, 0.0], [100.0, 100.0]);
/// picture.rect([0.0, 0.0], [100.0, 100.0], Color::rgb(245, 245, 240));
/// picture.dot([10.0, 20.0], 3.0, Color::rgb(52, 120, 200)); // 3 px, whatever the zoom
/// picture.circle([50.0, 50.0], 8.0, Color::rgb(230, 126, 34).alpha(0.5)); // 8 world units
/// picture.line([10.0, 20.0], [50.0, 50.0], Color::rgb(0, 0, 0));
/// picture.label([50.0, 60.0], "base", Color::rgb(0, 0, 0));
/// ```
#[derive(Debug, Default)]
pub struct Picture {
    bounds: Option<[f32; 4]>,
    y_down: bool,
    title: String,
    palette: Vec<Color>,
    index: HashMap<Color, u32>,
    rects: Vec<f32>,
    lines: Vec<f32>,
    circles: Vec<f32>,
    dots: Vec<f32>,
    labels: Vec<Label>,
    shapes: usize,
}

#[derive(Debug, Serialize)]
struct Label {
    x: f32,
    y: f32,
    text: String,
    color: u32,
}

impl Picture {
    /// The part of the world to show, from `min` to `max` (default: every shape).
    pub fn bounds(&mut self, min: [f32; 2], max: [f32; 2]) {
        self.bounds = Some([min[0], min[1], max[0], max[1]]);
    }

    /// Draws y growing downwards (screen coordinates); by default y grows upwards.
    pub fn y_down(&mut self) {
        self.y_down = true;
    }

    /// A caption above the picture.
    pub fn title(&mut self, title: impl Into<String>) {
        self.title = title.into();
    }

    /// A filled dot at `at`, `pixels` in radius on the page whatever the zoom: a unit, a
    /// particle.
    pub fn dot(&mut self, at: [f32; 2], pixels: f32, color: Color) {
        if self.room() {
            let c = self.color(color);
            self.dots.extend([at[0], at[1], pixels, c]);
        }
    }

    /// A filled circle at `center`, `radius` in world units.
    pub fn circle(&mut self, center: [f32; 2], radius: f32, color: Color) {
        if self.room() {
            let c = self.color(color);
            self.circles.extend([center[0], center[1], radius, c]);
        }
    }

    /// A line from `from` to `to`, one pixel wide.
    pub fn line(&mut self, from: [f32; 2], to: [f32; 2], color: Color) {
        if self.room() {
            let c = self.color(color);
            self.lines.extend([from[0], from[1], to[0], to[1], c]);
        }
    }

    /// A filled rectangle from corner `min` to corner `max`.
    pub fn rect(&mut self, min: [f32; 2], max: [f32; 2], color: Color) {
        if self.room() {
            let c = self.color(color);
            self.rects.extend([min[0], min[1], max[0], max[1], c]);
        }
    }

    /// A text label at `at` (at most [`MAX_LABELS`] are kept).
    pub fn label(&mut self, at: [f32; 2], text: impl Into<String>, color: Color) {
        if self.labels.len() < MAX_LABELS && self.room() {
            let color = self.color(color) as u32;
            self.labels.push(Label {
                x: at[0],
                y: at[1],
                text: text.into(),
                color,
            });
        }
    }

    /// Empties the picture, keeping its memory.
    pub(crate) fn clear(&mut self) {
        self.palette.clear();
        self.index.clear();
        self.bounds = None;
        self.y_down = false;
        self.title.clear();
        self.rects.clear();
        self.lines.clear();
        self.circles.clear();
        self.dots.clear();
        self.labels.clear();
        self.shapes = 0;
    }

    /// Shapes given so far, kept or not.
    pub fn shapes(&self) -> usize {
        self.shapes
    }

    /// Counts a shape; whether it is kept (fewer than [`MAX_SHAPES`] so far).
    fn room(&mut self) -> bool {
        self.shapes += 1;
        self.shapes <= MAX_SHAPES
    }

    /// `color`'s index in the palette (as an `f32`: it goes in the shape lists; exact for
    /// up to 2^24 colours).
    fn color(&mut self, color: Color) -> f32 {
        let next = self.palette.len() as u32;
        let i = *self.index.entry(color).or_insert(next);
        if i == next {
            self.palette.push(color);
        }
        i as f32
    }

    /// The picture as the API sends it, for frame `frame`.
    pub(crate) fn reply(&self, frame: u64) -> Reply<'_> {
        Reply {
            frame,
            title: &self.title,
            bounds: self.bounds,
            y_down: self.y_down,
            colors: self.palette.iter().map(|c| c.css()).collect(),
            rects: &self.rects,
            lines: &self.lines,
            circles: &self.circles,
            dots: &self.dots,
            labels: &self.labels,
            shapes: self.shapes,
            truncated: self.shapes > MAX_SHAPES,
        }
    }
}

/// A [`Picture`] as JSON (see the crate docs' `GET /api/picture`).
#[derive(Serialize)]
pub(crate) struct Reply<'a> {
    frame: u64,
    title: &'a str,
    bounds: Option<[f32; 4]>,
    y_down: bool,
    colors: Vec<String>,
    rects: &'a [f32],
    lines: &'a [f32],
    circles: &'a [f32],
    dots: &'a [f32],
    labels: &'a [Label],
    shapes: usize,
    truncated: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_flat_lists_with_a_palette_and_a_cap() {
        let mut p = Picture::default();
        let blue = Color::rgb(0, 0, 255);
        p.dot([1.0, 2.0], 3.0, blue);
        p.circle([4.0, 5.0], 6.0, Color::rgb(255, 0, 0).alpha(0.5));
        p.dot([7.0, 8.0], 1.0, blue);
        p.label([0.0, 0.0], "a", blue);
        let j = serde_json::to_value(p.reply(9)).unwrap();
        assert_eq!(j["frame"], 9);
        assert_eq!(j["colors"], serde_json::json!(["#0000ffff", "#ff000080"]));
        assert_eq!(
            j["dots"],
            serde_json::json!([1.0, 2.0, 3.0, 0.0, 7.0, 8.0, 1.0, 0.0])
        );
        assert_eq!(j["circles"], serde_json::json!([4.0, 5.0, 6.0, 1.0]));
        assert_eq!(j["labels"][0]["text"], "a");
        assert_eq!(
            (j["shapes"].as_u64(), j["truncated"].as_bool()),
            (Some(4), Some(false))
        );
        for i in 0..MAX_SHAPES {
            p.dot([i as f32, 0.0], 1.0, blue);
        }
        let j = serde_json::to_value(p.reply(9)).unwrap();
        assert_eq!(j["truncated"], true);
        assert_eq!(j["shapes"].as_u64(), Some(MAX_SHAPES as u64 + 4));
        let kept = j["dots"].as_array().unwrap().len() / 4
            + j["circles"].as_array().unwrap().len() / 4
            + j["labels"].as_array().unwrap().len();
        assert_eq!(kept, MAX_SHAPES);
    }
}
