//! Who may use the inspector: the `Host` and `Origin` checks, and the token.
//!
//! The API can pause and rewind the game, so who reaches the port matters. The policy
//! depends on the address bound:
//!
//! - **Loopback** (`127.0.0.1`, `[::1]`): only this machine connects. No token is needed
//!   (one sent is ignored). `Host` must be a loopback name (`localhost`, `127.x.y.z`,
//!   `[::1]`), so a page whose DNS name rebinds to 127.0.0.1 is refused.
//! - **Any other address** (a LAN address, `0.0.0.0`, `[::]`): every request under
//!   `/api` must carry the inspector's token, `Authorization: Bearer TOKEN` (the page
//!   sends it: it reads it from its own URL, `/?token=TOKEN`, which
//!   [`Inspector::url`](crate::Inspector::url) prints). The token is 32 bytes from the
//!   operating system's random source (`getrandom`), written in hex, and is compared in
//!   constant time. `Host` must name this machine: a loopback name, an IP address of one of
//!   its interfaces (one a socket can be bound to), its host name, or a name allowed with
//!   [`allow_host`](crate::InspectorBuilder::allow_host) (arena: `--inspect-host NAME`) —
//!   anything else is a DNS name someone else controls.
//!
//! Either way, a request with an `Origin` header (browsers send one on cross-origin
//! requests and on same-origin POSTs) must come from `http://` + its own `Host`. A request
//! without `Host` (HTTP/1.0, or a hand-made client) is not refused for it: browsers, the
//! only clients a rebinding page can use, always send one.
//!
//! The page itself (`GET /`) needs no token: it is a static file with no secret in it.

use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};

use subtle::ConstantTimeEq;

use crate::http::Response;

/// Bytes of randomness in a generated token (written as twice as many hex digits).
const TOKEN_BYTES: usize = 32;

/// The access policy of one server; see the module docs.
#[derive(Debug)]
pub(crate) struct Access {
    /// The token every API request must carry (`None`: loopback, no token).
    token: Option<String>,
    /// Names (lower case) accepted in `Host` besides loopback names and this machine's
    /// addresses; empty for a loopback bind, which accepts loopback names only.
    names: Vec<String>,
    loopback: bool,
}

impl Access {
    /// The policy of a loopback bind: loopback `Host` names only, no token.
    pub(crate) fn loopback() -> Access {
        Access {
            token: None,
            names: Vec::new(),
            loopback: true,
        }
    }

    /// The policy of a non-loopback bind: `token` on every API request; `Host` a loopback
    /// name, an address of this machine, or one of `names` (compared ignoring ASCII case).
    pub(crate) fn remote(token: String, names: impl IntoIterator<Item = String>) -> Access {
        Access {
            token: Some(token),
            names: names
                .into_iter()
                .map(|n| n.to_ascii_lowercase())
                .filter(|n| !n.is_empty())
                .collect(),
            loopback: false,
        }
    }

    /// The policy for a server bound to `addr`: [`loopback`](Self::loopback), or
    /// [`remote`](Self::remote) with a fresh token, this machine's host name and `allowed`.
    ///
    /// # Errors
    /// If the operating system's random source fails (no token, so no server).
    pub(crate) fn for_bind(addr: SocketAddr, allowed: &[String]) -> io::Result<Access> {
        if addr.ip().is_loopback() {
            return Ok(Access::loopback());
        }
        let host = host_name();
        Ok(Access::remote(
            generate_token()?,
            host.into_iter().chain(allowed.iter().cloned()),
        ))
    }

    /// The token API requests must carry, if any.
    pub(crate) fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Refuses (`403`) a `Host` that does not name this machine by the policy's rules.
    pub(crate) fn check_host(&self, host: Option<&str>) -> Result<(), Response> {
        let Some(host) = host else {
            return Ok(());
        };
        let Some(name) = host_name_part(host) else {
            return Err(Response::error(
                403,
                format!("`Host: {}` is not a host name", clip(host)),
            ));
        };
        let ip = name.parse::<IpAddr>().ok();
        if name.eq_ignore_ascii_case("localhost") || ip.is_some_and(|ip| ip.is_loopback()) {
            return Ok(());
        }
        if self.loopback {
            return Err(Response::error(
                403,
                format!(
                    "Host `{}` is not a loopback name: the inspector, bound to loopback, \
                     answers only localhost, 127.0.0.1 or [::1]",
                    clip(host)
                ),
            ));
        }
        let known = match ip {
            Some(ip) => is_local_address(ip),
            None => self.names.iter().any(|n| n.eq_ignore_ascii_case(name)),
        };
        if known {
            Ok(())
        } else {
            Err(Response::error(
                403,
                format!(
                    "Host `{}` does not name this machine (accepted: its addresses, its host \
                     name{}, localhost): allow another name with \
                     `InspectorBuilder::allow_host` (arena: `--inspect-host NAME`)",
                    clip(host),
                    if self.names.is_empty() {
                        String::new()
                    } else {
                        format!(" and {}", self.names.join(", "))
                    }
                ),
            ))
        }
    }

    /// Refuses (`403`) an `Origin` other than `http://` + the request's own `Host`.
    pub(crate) fn check_origin(origin: Option<&str>, host: Option<&str>) -> Result<(), Response> {
        let Some(origin) = origin else {
            return Ok(());
        };
        let same = host.is_some_and(|h| {
            origin
                .strip_prefix("http://")
                .is_some_and(|o| o.eq_ignore_ascii_case(h))
        });
        if same {
            Ok(())
        } else {
            Err(Response::error(
                403,
                format!("cross-origin request from `{}` refused", clip(origin)),
            ))
        }
    }

    /// Refuses (`401`) an API request without the policy's token, given the request's
    /// `Authorization` header. The comparison takes the same time wherever the tokens
    /// differ.
    pub(crate) fn check_token(&self, authorization: Option<&str>) -> Result<(), Response> {
        let Some(token) = &self.token else {
            return Ok(());
        };
        let presented = authorization.and_then(|a| {
            let (scheme, value) = a.split_once(' ')?;
            scheme
                .eq_ignore_ascii_case("bearer")
                .then_some(value.trim())
        });
        match presented {
            // `subtle`: the same time wherever the bytes differ (a length that differs is
            // refused at once; every token has the same length, no secret).
            Some(p) if bool::from(p.as_bytes().ct_eq(token.as_bytes())) => Ok(()),
            Some(_) => Err(Response::error(
                401,
                "wrong token: open the URL the inspector printed (it ends in `/?token=…`), or \
                 send that token as `Authorization: Bearer TOKEN`",
            )),
            None => Err(Response::error(
                401,
                "this inspector is bound to a non-loopback address and needs its token: open \
                 the URL it printed (it ends in `/?token=…`), or send the token as \
                 `Authorization: Bearer TOKEN`",
            )),
        }
    }
}

/// A fresh token: [`TOKEN_BYTES`] bytes from the operating system, in hex.
pub(crate) fn generate_token() -> io::Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| {
        io::Error::other(format!("no random source for the inspector's token: {e}"))
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The name in a `Host` value, without its port: `a.b:80` → `a.b`, `[::1]:9` → `::1`;
/// `None` if it is malformed (an unclosed `[`, a port that is not a number).
fn host_name_part(host: &str) -> Option<&str> {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        match after {
            "" => (ip, None),
            _ => (ip, Some(after.strip_prefix(':')?)),
        }
    } else {
        match host.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        }
    };
    let port_ok = port.is_none_or(|p| p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    (port_ok && !name.is_empty()).then_some(name)
}

/// Whether `ip` is an address of one of this machine's interfaces: one a socket can be
/// bound to (the unspecified and multicast addresses are not).
fn is_local_address(ip: IpAddr) -> bool {
    !ip.is_unspecified() && !ip.is_multicast() && UdpSocket::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// This machine's host name, if it has one that can go in a URL.
pub(crate) fn host_name() -> Option<String> {
    let name = gethostname::gethostname().into_string().ok()?;
    let usable = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    usable.then_some(name)
}

/// The address to print in the URL of a server bound to `addr`: the bound address, or, for
/// an unspecified one (`0.0.0.0`, `[::]`), the address of the interface this machine
/// reaches other networks by (found by routing a UDP socket: nothing is sent), else the
/// host name, else loopback.
pub(crate) fn advertised_host(addr: SocketAddr) -> String {
    let ip = if addr.ip().is_unspecified() {
        match (outbound_address(addr.ip()), host_name()) {
            (Some(ip), _) => ip,
            (None, Some(name)) => return name,
            (None, None) => match addr {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            },
        }
    } else {
        addr.ip()
    };
    match ip {
        IpAddr::V6(v6) => format!("[{v6}]"),
        IpAddr::V4(v4) => v4.to_string(),
    }
}

/// The local address a UDP socket gets when routed towards a documentation address
/// (TEST-NET-1 or 2001:db8::): the interface of the default route, if any.
fn outbound_address(unspecified: IpAddr) -> Option<IpAddr> {
    let (bind, target): (SocketAddr, SocketAddr) = match unspecified {
        IpAddr::V4(_) => (
            "0.0.0.0:0".parse().expect("an address"),
            "192.0.2.1:9".parse().expect("an address"),
        ),
        IpAddr::V6(_) => (
            "[::]:0".parse().expect("an address"),
            "[2001:db8::1]:9".parse().expect("an address"),
        ),
    };
    let socket = UdpSocket::bind(bind).ok()?;
    socket.connect(target).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_unspecified() && !ip.is_loopback()).then_some(ip)
}

/// At most 80 characters of a value, for an error message.
fn clip(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_binds_accept_loopback_hosts_only() {
        let a = Access::loopback();
        for h in [
            "localhost",
            "LocalHost:80",
            "127.0.0.1:7070",
            "127.1.2.3",
            "[::1]:9",
            "[::1]",
        ] {
            assert!(a.check_host(Some(h)).is_ok(), "{h}");
        }
        for h in [
            "evil.example",
            "evil.example:80",
            "10.0.0.1",
            "[::2]:1",
            "[::1",
            "[::1]x",
            "",
            "localhost:80:90",
            "localhost:http",
            "localhost.:80",
        ] {
            assert_eq!(a.check_host(Some(h)).unwrap_err().status, 403, "{h}");
        }
        assert!(a.check_host(None).is_ok());
        assert!(a.check_token(None).is_ok(), "no token on loopback");
        assert!(a.check_token(Some("Bearer anything")).is_ok());
    }

    #[test]
    fn remote_binds_accept_this_machine_and_allowed_names() {
        let a = Access::remote("t0ken".repeat(8), ["Inspector.Example".to_owned()]);
        for h in [
            "localhost:1",
            "127.0.0.1",
            "inspector.example:7304",
            "INSPECTOR.example",
        ] {
            assert!(a.check_host(Some(h)).is_ok(), "{h}");
        }
        for h in [
            "evil.example",
            "inspector.example.evil.example",
            "0.0.0.0:7304",
            "192.0.2.77", // documentation range: on no interface here
            "224.0.0.1",
        ] {
            assert_eq!(a.check_host(Some(h)).unwrap_err().status, 403, "{h}");
        }
    }

    #[test]
    fn tokens_are_random_and_checked_exactly() {
        let t = generate_token().unwrap();
        assert_eq!(t.len(), 2 * TOKEN_BYTES);
        assert!(t.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(t, generate_token().unwrap(), "two tokens differ");
        let a = Access::remote(t.clone(), []);
        assert!(a.check_token(Some(&format!("Bearer {t}"))).is_ok());
        assert!(a.check_token(Some(&format!("bearer  {t} "))).is_ok());
        let mut wrong = t.clone().into_bytes();
        wrong[63] ^= 1;
        let wrong = String::from_utf8(wrong).unwrap();
        for bad in [
            None,
            Some(String::new()),
            Some(t.clone()),
            Some(format!("Basic {t}")),
            Some(format!("Bearer {wrong}")),
            Some(format!("Bearer {}", &t[..63])),
            Some(format!("Bearer {t}0")),
        ] {
            assert_eq!(
                a.check_token(bad.as_deref()).unwrap_err().status,
                401,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn origins_must_be_the_host_itself() {
        assert!(Access::check_origin(None, Some("a:1")).is_ok());
        assert!(Access::check_origin(Some("http://a:1"), Some("a:1")).is_ok());
        for (o, h) in [
            ("http://evil", Some("a:1")),
            ("https://a:1", Some("a:1")),
            ("http://a:1", None),
            ("null", Some("a:1")),
        ] {
            assert!(Access::check_origin(Some(o), h).is_err(), "{o} {h:?}");
        }
    }

    #[test]
    fn the_advertised_host_is_never_unspecified() {
        for bind in ["0.0.0.0:7304", "[::]:7304"] {
            let h = advertised_host(bind.parse().unwrap());
            assert!(!h.is_empty() && h != "0.0.0.0" && h != "[::]", "{h}");
        }
        assert_eq!(advertised_host("10.1.2.3:9".parse().unwrap()), "10.1.2.3");
        assert_eq!(advertised_host("[fe80::1]:9".parse().unwrap()), "[fe80::1]");
    }
}
