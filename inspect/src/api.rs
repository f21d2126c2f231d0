//! Routing: a request becomes a [`Command`] for the game thread, the page, or an error —
//! all decided on the connection's thread, so a malformed request never reaches the game.
//!
//! Every number in a request is read the same way, by [`parse_number`]: ASCII digits
//! only (no sign, no spaces, at most 20), into the parameter's type with overflow checked,
//! then against the parameter's own bounds — each a `400` that names the parameter, the
//! bounds and what was sent. Bounds that depend on the game's state (a `since` after the
//! last timeline record, a frame the ring does not hold) are checked on the game thread,
//! with checked arithmetic, and answered `400`/`404` there.

use runsync::Entity;
use serde::Deserialize;

use crate::access::Access;
use crate::http::{Request, Response};
use crate::view::MAX_TREE_NODES;

/// Most frames one `step` may run.
pub(crate) const MAX_STEP: u32 = 600;
/// Most entities one page of `/api/entities` lists.
pub(crate) const MAX_LIMIT: usize = 1000;
/// Largest `offset` of `/api/entities`: entity indices are `u32`, so no world holds more
/// entities than this.
pub(crate) const MAX_OFFSET: usize = u32::MAX as usize;

/// What the game thread is asked to do.
#[derive(Debug)]
pub(crate) enum Command {
    Status,
    Timeline {
        since: Option<u64>,
    },
    Pause,
    Resume,
    Step {
        frames: u32,
        /// The input for the frames past the recorded end (JSON of the game's input
        /// type, read on the game thread, which knows it).
        input: Option<serde_json::Value>,
    },
    Rewind(RewindTo),
    Entities {
        with: Vec<String>,
        offset: usize,
        limit: usize,
    },
    Entity(Entity),
    Watch(Entity),
    Unwatch(Entity),
    Explain(Entity),
    /// The game's picture of the state with `frame` frames completed (the present if
    /// `None`).
    Picture {
        frame: Option<u64>,
    },
    /// The parent/child forest, at most `limit` nodes.
    Tree {
        limit: usize,
    },
    Resources,
    /// A change to the world (only while paused; never read-only).
    Edit(EditCommand),
}

/// An edit as the API asks for it: types by name, values as JSON (decoded on the game
/// thread, which knows the types).
#[derive(Debug)]
pub(crate) enum EditCommand {
    /// Sets components of an entity, inserting those it lacks.
    Insert {
        entity: Entity,
        components: serde_json::Map<String, serde_json::Value>,
    },
    /// Removes components from an entity.
    Remove {
        entity: Entity,
        components: Vec<String>,
    },
    /// Spawns an entity with these components.
    Spawn {
        components: serde_json::Map<String, serde_json::Value>,
    },
    Despawn(Entity),
}

/// The body of `insert` and `spawn`: each component's type (full or short name) and its
/// value as JSON.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Components {
    components: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug)]
pub(crate) enum RewindTo {
    /// The state with this many frames completed.
    Frame(u64),
    /// This many frames back from now.
    Back(u64),
}

pub(crate) enum Route {
    Page,
    Game(Command),
}

/// Parses a request into a route, or the error to answer. Everything but the page needs
/// the token, if `access` has one (`401` without it).
pub(crate) fn route(req: &Request, access: &Access) -> Result<Route, Response> {
    let segments: Vec<&str> = req.path.split('/').filter(|s| !s.is_empty()).collect();
    let get = req.method == "GET";
    let post = req.method == "POST";
    let method = |ok: bool, allowed: &str| -> Result<(), Response> {
        if ok {
            Ok(())
        } else {
            Err(Response::error(
                405,
                format!("{} {}: use {allowed}", req.method, req.path),
            ))
        }
    };
    let no_query = || -> Result<(), Response> {
        if req.query.is_empty() {
            Ok(())
        } else {
            Err(Response::error(
                400,
                format!("{} takes no query parameters", req.path),
            ))
        }
    };
    if !matches!(segments.as_slice(), [] | ["index.html"]) {
        access.check_token(req.authorization.as_deref())?;
    }
    let command = match segments.as_slice() {
        [] | ["index.html"] => {
            method(get, "GET")?;
            return Ok(Route::Page);
        }
        ["api", "status"] => {
            method(get, "GET")?;
            no_query()?;
            Command::Status
        }
        ["api", "timeline"] => {
            method(get, "GET")?;
            let q = Query::parse(&req.query, &["since"])?;
            Command::Timeline {
                since: q.number("since", 0..=u64::MAX)?,
            }
        }
        ["api", "pause"] => {
            method(post, "POST")?;
            no_query()?;
            no_body(req)?;
            Command::Pause
        }
        ["api", "resume"] => {
            method(post, "POST")?;
            no_query()?;
            no_body(req)?;
            Command::Resume
        }
        ["api", "step"] => {
            method(post, "POST")?;
            no_query()?;
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct Step {
                frames: Option<u32>,
                input: Option<serde_json::Value>,
            }
            let (frames, input) = if req.body.is_empty() {
                (1, None)
            } else {
                let s = json::<Step>(req, r#"{"frames": 1} or {"frames": 1, "input": {…}}"#)?;
                (s.frames.unwrap_or(1), s.input)
            };
            if !(1..=MAX_STEP).contains(&frames) {
                return Err(Response::error(
                    400,
                    format!("`frames` must be 1 to {MAX_STEP} (got {frames})"),
                ));
            }
            Command::Step { frames, input }
        }
        ["api", "rewind"] => {
            method(post, "POST")?;
            no_query()?;
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct Rewind {
                frame: Option<u64>,
                back: Option<u64>,
            }
            let r = json::<Rewind>(req, r#"{"frame": 120} or {"back": 10}"#)?;
            match (r.frame, r.back) {
                (Some(f), None) => Command::Rewind(RewindTo::Frame(f)),
                (None, Some(b)) => Command::Rewind(RewindTo::Back(b)),
                _ => {
                    return Err(Response::error(
                        400,
                        r#"give exactly one of `frame` (the state with that many frames completed) and `back` (frames back from now): {"frame": 120} or {"back": 10}"#,
                    ));
                }
            }
        }
        ["api", "picture"] => {
            method(get, "GET")?;
            let q = Query::parse(&req.query, &["frame"])?;
            Command::Picture {
                frame: q.number("frame", 0..=u64::MAX)?,
            }
        }
        ["api", "tree"] => {
            method(get, "GET")?;
            let q = Query::parse(&req.query, &["limit"])?;
            Command::Tree {
                limit: q.number("limit", 0..=MAX_TREE_NODES)?.unwrap_or(500),
            }
        }
        ["api", "resources"] => {
            method(get, "GET")?;
            no_query()?;
            Command::Resources
        }
        ["api", "entities"] => {
            method(get, "GET")?;
            let q = Query::parse(&req.query, &["with", "offset", "limit"])?;
            let with = q
                .get("with")
                .map(|w| {
                    w.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let offset = q.number("offset", 0..=MAX_OFFSET)?.unwrap_or(0);
            let limit = q.number("limit", 0..=MAX_LIMIT)?.unwrap_or(100);
            Command::Entities {
                with,
                offset,
                limit,
            }
        }
        ["api", "entities", id] => {
            method(get, "GET")?;
            no_query()?;
            Command::Entity(parse_entity(id)?)
        }
        ["api", "spawn"] => {
            method(post, "POST")?;
            no_query()?;
            let b = json::<Components>(req, r#"{"components": {"Health": {"hp": 10}}}"#)?;
            Command::Edit(EditCommand::Spawn {
                components: b.components,
            })
        }
        ["api", "entities", id, "insert"] => {
            method(post, "POST")?;
            no_query()?;
            let entity = parse_entity(id)?;
            let b = json::<Components>(req, r#"{"components": {"Health": {"hp": 10}}}"#)?;
            if b.components.is_empty() {
                return Err(Response::error(400, "`components` names no component"));
            }
            Command::Edit(EditCommand::Insert {
                entity,
                components: b.components,
            })
        }
        ["api", "entities", id, "remove"] => {
            method(post, "POST")?;
            no_query()?;
            let entity = parse_entity(id)?;
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct Names {
                components: Vec<String>,
            }
            let b = json::<Names>(req, r#"{"components": ["Health"]}"#)?;
            if b.components.is_empty() {
                return Err(Response::error(400, "`components` names no component"));
            }
            Command::Edit(EditCommand::Remove {
                entity,
                components: b.components,
            })
        }
        ["api", "entities", id, "despawn"] => {
            method(post, "POST")?;
            no_query()?;
            no_body(req)?;
            Command::Edit(EditCommand::Despawn(parse_entity(id)?))
        }
        [
            "api",
            "entities",
            id,
            action @ ("watch" | "unwatch" | "explain"),
        ] => {
            method(post, "POST")?;
            no_query()?;
            no_body(req)?;
            let e = parse_entity(id)?;
            match *action {
                "watch" => Command::Watch(e),
                "unwatch" => Command::Unwatch(e),
                _ => Command::Explain(e),
            }
        }
        _ => {
            return Err(Response::error(
                404,
                format!(
                    "no such endpoint: {} {} (the API: /api/status, /api/timeline, \
                     /api/pause, /api/resume, /api/step, /api/rewind, /api/entities, \
                     /api/entities/{{id}}, /api/entities/{{id}}/watch|unwatch|explain, \
                     /api/entities/{{id}}/insert|remove|despawn, /api/spawn, \
                     /api/picture, /api/tree, /api/resources)",
                    req.method, req.path
                ),
            ));
        }
    };
    Ok(Route::Game(command))
}

fn no_body(req: &Request) -> Result<(), Response> {
    let blank = req.body.iter().all(u8::is_ascii_whitespace);
    if blank || req.body == b"{}" {
        Ok(())
    } else {
        Err(Response::error(400, format!("{} takes no body", req.path)))
    }
}

fn json<T: for<'de> Deserialize<'de>>(req: &Request, example: &str) -> Result<T, Response> {
    serde_json::from_slice(&req.body).map_err(|e| {
        Response::error(
            400,
            format!("{}: bad JSON body ({e}); expected e.g. {example}", req.path),
        )
    })
}

/// An entity id as the API writes it: `{index}v{generation}` (as `Entity`'s `Debug`).
pub(crate) fn parse_entity(s: &str) -> Result<Entity, Response> {
    let bad = || {
        Response::error(
            400,
            format!(
                "bad entity id `{}`: write it as index `v` generation, e.g. `12v1`",
                s.chars().take(40).collect::<String>()
            ),
        )
    };
    let (index, generation) = s.split_once('v').ok_or_else(bad)?;
    let index: u32 = digits(index).ok_or_else(bad)?;
    let generation: u32 = digits(generation).ok_or_else(bad)?;
    Entity::from_bits((u64::from(generation) << 32) | u64::from(index)).ok_or_else(bad)
}

/// A number written in decimal ASCII digits only (no sign, no spaces, 1 to 20 digits), if it
/// fits `N` (`FromStr` alone would take a `+` sign).
fn digits<N: std::str::FromStr>(s: &str) -> Option<N> {
    let plain = !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    plain.then(|| s.parse().ok()).flatten()
}

/// `key`'s value as a number in `range`, or a `400` saying which bounds it broke.
pub(crate) fn parse_number<N>(
    key: &str,
    value: &str,
    range: std::ops::RangeInclusive<N>,
) -> Result<N, Response>
where
    N: std::str::FromStr + PartialOrd + std::fmt::Display,
{
    let shown = || value.chars().take(40).collect::<String>();
    let n: N = digits(value).ok_or_else(|| {
        Response::error(
            400,
            format!(
                "`{key}` must be a whole number from {} to {}, in decimal digits (got `{}`)",
                range.start(),
                range.end(),
                shown()
            ),
        )
    })?;
    if range.contains(&n) {
        Ok(n)
    } else {
        Err(Response::error(
            400,
            format!(
                "`{key}` must be from {} to {} (got {n})",
                range.start(),
                range.end()
            ),
        ))
    }
}

/// Query parameters, percent-decoded; unknown names are an error.
struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    fn parse(query: &str, known: &[&str]) -> Result<Query, Response> {
        let mut pairs = Vec::new();
        for part in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            let (k, v) = (decode(k)?, decode(v)?);
            if !known.contains(&k.as_str()) {
                return Err(Response::error(
                    400,
                    format!(
                        "unknown query parameter `{}` (this endpoint takes: {})",
                        k.chars().take(40).collect::<String>(),
                        known.join(", ")
                    ),
                ));
            }
            pairs.push((k, v));
        }
        Ok(Query { pairs })
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The parameter `key` as a number in `range` ([`parse_number`]), if given.
    fn number<N>(
        &self,
        key: &str,
        range: std::ops::RangeInclusive<N>,
    ) -> Result<Option<N>, Response>
    where
        N: std::str::FromStr + PartialOrd + std::fmt::Display,
    {
        self.get(key)
            .map(|v| parse_number(key, v, range))
            .transpose()
    }
}

/// Percent-decoding (and `+` as space) of a query component, into UTF-8. A `%` not
/// followed by two hex digits is refused (`percent-encoding` would pass it through as it
/// is), and so are bytes that decode to something other than UTF-8.
fn decode(s: &str) -> Result<String, Response> {
    let bad = || Response::error(400, "bad percent-encoding in the query");
    let escapes_whole = s.split('%').skip(1).all(|after| {
        after
            .as_bytes()
            .get(..2)
            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    if !escapes_whole {
        return Err(bad());
    }
    // `+` first: an escaped one (`%2B`) stays a `+`.
    percent_encoding::percent_decode_str(&s.replace('+', " "))
        .decode_utf8()
        .map(|decoded| decoded.into_owned())
        .map_err(|_| bad())
}

/// A type name without its module paths: `my_game::Health`, `glam::Vec2` in
/// `a::Wrap<glam::Vec2>` become `Health`, `Wrap<Vec2>`.
pub(crate) fn short_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut segment_start = 0;
    let mut chars = name.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        if c == ':' && chars.peek().map(|&(_, n)| n) == Some(':') {
            chars.next();
            out.truncate(segment_start);
            continue;
        }
        if !(c.is_alphanumeric() || c == '_') {
            out.push(c);
            segment_start = out.len();
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names() {
        assert_eq!(short_name("my_game::Health"), "Health");
        assert_eq!(short_name("Health"), "Health");
        assert_eq!(short_name("a::Wrap<glam::Vec2>"), "Wrap<Vec2>");
        assert_eq!(short_name("(a::B, c::D)"), "(B, D)");
    }

    #[test]
    fn entity_ids() {
        let e = parse_entity("12v3").unwrap();
        assert_eq!((e.index(), e.generation()), (12, 3));
        assert_eq!(format!("{e:?}"), "12v3");
        for bad in [
            "12",
            "v1",
            "12v0",
            "12v",
            "x1v1",
            "-1v1",
            "1v99999999999",
            "+1v1",
            "1v+1",
            " 1v1",
            "1v1 ",
            "4294967296v1",
            "1v4294967296",
            "18446744073709551615v1",
            "1v2v3",
        ] {
            assert_eq!(parse_entity(bad).unwrap_err().status, 400, "{bad}");
        }
    }

    #[test]
    fn queries_decode_and_refuse_unknown_names() {
        let q = Query::parse("with=a%3A%3AB,C&offset=2", &["with", "offset"]).unwrap();
        assert_eq!(q.get("with"), Some("a::B,C"));
        assert_eq!(q.number("offset", 0..=usize::MAX).unwrap(), Some(2));
        assert_eq!(Query::parse("x=1", &["with"]).err().unwrap().status, 400);
        assert_eq!(
            Query::parse("with=%zz", &["with"]).err().unwrap().status,
            400
        );
        let q = Query::parse("offset=-1", &["offset"]).unwrap();
        assert_eq!(q.number("offset", 0..=usize::MAX).unwrap_err().status, 400);
        assert_eq!(
            Query::parse("with=%+f", &["with"]).err().unwrap().status,
            400
        );
    }

    /// `+` is a space and `%2B` a plus; an escape must be whole (two hex digits, either
    /// case) and the result UTF-8, else the query is refused.
    #[test]
    fn decoding_takes_whole_escapes_to_utf8_only() {
        for (raw, want) in [
            ("a+b", "a b"),
            ("a%2Bb", "a+b"),
            ("%2b%2B", "++"),
            ("%e2%82%AC", "\u{20ac}"),
            ("%41%42", "AB"),
            ("", ""),
            ("plain", "plain"),
        ] {
            assert_eq!(decode(raw).ok().as_deref(), Some(want), "{raw}");
        }
        for bad in [
            "%", "%4", "a%", "%%41", "%41%", "%g1", "%1g", "% 1", "%ff", "%c3%28",
        ] {
            assert_eq!(decode(bad).unwrap_err().status, 400, "{bad}");
        }
    }

    #[test]
    fn numbers_are_plain_digits_within_their_bounds() {
        assert_eq!(parse_number("n", "0", 0..=5u64).unwrap(), 0);
        assert_eq!(parse_number("n", "005", 0..=5u64).unwrap(), 5);
        assert_eq!(
            parse_number("n", "18446744073709551615", 0..=u64::MAX).unwrap(),
            u64::MAX
        );
        for bad in [
            "",
            "+1",
            "-0",
            " 1",
            "1 ",
            "1e3",
            "0x10",
            "6",
            "18446744073709551616",
            "999999999999999999999999",
            "1.0",
        ] {
            let e = parse_number("n", bad, 0..=5u64).unwrap_err();
            assert_eq!(e.status, 400, "{bad:?}");
            let text = String::from_utf8_lossy(&e.body).into_owned();
            assert!(text.contains("`n` must be") && text.contains('5'), "{text}");
        }
    }
}
